"""Neutral stream events: produced by every codec fold, consumed by sessions, CLI and gateway."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from thoughtline.messages import Message, Usage


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
class Done:
    """The turn is over: the folded canonical message, stored when complete."""

    message: Message
    usage: Usage
    finish_reason: str | None


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know (a learned verdict, a retry); not part of the turn."""

    text: str


Event: TypeAlias = ReasoningDelta | TextDelta | ToolCallStarted | Done | Notice
