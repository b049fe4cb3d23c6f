"""Neutral stream events: produced by every codec fold, consumed by sessions, CLI and gateway."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from thoughtline.messages import FinishReason, Message, Opaque, Reasoning, Usage


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of the arguments of the tool call at ``index`` (as received, not parsed)."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class PartDone:
    """A part that streams no deltas of its own finished, whole and in its place: a reasoning
    block with its signature or opaque data, a block replayed verbatim (``Opaque``). Said before
    whatever follows it, so a client face that replays blocks in order can. Additive: consumers
    that only show deltas ignore it."""

    part: Reasoning | Opaque


@dataclass(frozen=True, slots=True)
class Done:
    """The turn is over: the folded canonical message, stored when complete.

    ``finish_reason`` is the provider's own word; ``finish`` the neutral one (None while a stream
    has not said why it stopped).
    """

    message: Message
    usage: Usage
    finish_reason: str | None
    finish: FinishReason | None = None
    #: Provider reports about the request itself (e.g. Anthropic ``input_transformations``),
    #: verbatim, for the request log and ``sessions show``; never part of the turn.
    reports: tuple[object, ...] = ()


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know (a learned verdict, a retry); not part of the turn."""

    text: str


Event: TypeAlias = (ReasoningDelta | TextDelta | ToolCallStarted | ToolCallDelta | PartDone
                    | Done | Notice)
