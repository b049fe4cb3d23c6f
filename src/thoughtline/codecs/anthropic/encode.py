"""Encode a request for an Anthropic-format route: the replay policy applied block by block.

The policy (one table, README "Anthropic"; facts provider-contracts §5, provider-updates §1a):

- the current tool loop is always replayed verbatim; earlier turns keep their thinking when the
  target model keeps prior thinking (``models.keeps_prior_thinking``), else only the last
  assistant turn keeps it;
- a signed or redacted block goes only where the profile's scope accepts its origin, never when
  its fingerprint was rejected, never when it is incomplete (cut before its signature);
- on a model that binds blocks to their prefix, once a block has gone out, a rejected block after
  it invalidates every block after it (§5), so the rest of that chain is left out too;
- **what replaces reasoning that cannot go signed: nothing.** The block is omitted. Thinking is
  never transcribed into text the model would read as its own words and imitate, and never sent
  unsigned to a route that checks signatures. Only routes documented to take unsigned thinking
  (DeepSeek, Kimi) get the stored text as an unsigned ``thinking`` block.

The encoder records where each wire block came from (``Index``), so a 400 naming
``messages.N.content.M`` maps back to the canonical part. Stored history is never mutated: the
body shares frozen values and cached wire turns; serialize it, never edit it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from thoughtline.codecs.anthropic import models, params
from thoughtline.codecs.anthropic.profile import AnthropicProfile
from thoughtline.codecs.anthropic.wire import (
    API,
    NS,
    REDACTED,
    TEXT,
    THINKING,
    TOOL_RESULT,
    TOOL_USE,
)
from thoughtline.messages import (
    Message,
    Opaque,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    fingerprint,
    freeze,
)
from thoughtline.replay import ReplayPlan, loop_start

Location = tuple[int, int]  # (wire message index, block index) = ``messages.N.content.M``


@dataclass(frozen=True, kw_only=True, slots=True)
class Index:
    """Wire block → canonical (history index, part index), and the fingerprint of opaque ones."""

    parts: Mapping[Location, tuple[int, int]] = field(default_factory=dict)
    fingerprints: Mapping[Location, str] = field(default_factory=dict)
    #: Counts for the request log: blocks of each kind sent, and thinking left out.
    sent: Mapping[str, int] = field(default_factory=dict)
    omitted: int = 0


def part_fingerprint(part: Reasoning) -> str:
    """The identity of a thinking block the API may reject: its type and signature or data."""
    if part.kind == "redacted":
        return fingerprint(REDACTED, part.data or "")
    return fingerprint(THINKING, part.signature or part.text or "")


class WireCache:
    """Per-session memo of stored assistant turns' wire blocks (turns are immutable)."""

    __slots__ = ("_turns",)

    def __init__(self) -> None:
        self._turns: dict[int, tuple[Message, tuple[Any, ...], _Turn]] = {}

    def __len__(self) -> int:
        return len(self._turns)

    def get(self, message: Message, key: tuple[Any, ...]) -> _Turn | None:
        found = self._turns.get(id(message))
        if found is not None and found[0] is message and found[1] == key:
            return found[2]
        return None

    def put(self, message: Message, key: tuple[Any, ...], turn: _Turn) -> None:
        self._turns[id(message)] = (message, key, turn)


@dataclass(frozen=True, slots=True)
class _Turn:
    """One assistant turn on the wire: its blocks, their part indexes, what was left out."""

    blocks: tuple[Any, ...]
    parts: tuple[int, ...]
    omitted: int
    chain_after: tuple[bool, bool]  # the binding chain (started, cut) after this turn


@dataclass(slots=True)
class _Chain:
    """Block binding state across turns: has a block gone out, has the chain been cut since."""

    binds: bool
    started: bool = False
    cut: bool = False


def _thinking_block(part: Reasoning, plan: ReplayPlan, profile: AnthropicProfile,
                    keep: bool, chain: _Chain) -> dict[str, Any] | None:
    signed = bool(part.signature or part.data) and part.complete
    rejected = plan.rejected(part_fingerprint(part))
    if (keep and signed and profile.keeps_signed and not chain.cut and not rejected
            and plan.may_replay(part.origin)):
        chain.started = True
        if part.kind == "redacted":
            return {"type": REDACTED, "data": part.data}
        return {"type": THINKING, THINKING: part.text or "", "signature": part.signature}
    if chain.binds and chain.started and signed and rejected:
        # §5: a block removed from the middle invalidates every later one. (Blocks left out by
        # scope or as incomplete were left out of every request, so later blocks never saw them.)
        chain.cut = True
    if (keep and profile.keeps_unsigned and part.kind != "redacted"
            and (part.text or "").strip() and not rejected):
        return {"type": THINKING, THINKING: part.text}
    return None


def _tool_input(arguments: str) -> Any:
    try:
        value = orjson.loads(arguments) if arguments.strip() else {}
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _assistant(message: Message, plan: ReplayPlan, keep: bool, chain: _Chain) -> _Turn:
    profile: AnthropicProfile = plan.profile
    blocks: list[Any] = []
    parts: list[int] = []
    omitted = 0
    for position, part in enumerate(message.parts):
        block: Any = None
        match part:
            case Reasoning():
                block = _thinking_block(part, plan, profile, keep and not message.incomplete,
                                        chain)
                omitted += block is None
            case Text(text=text) if text:
                block = {"type": TEXT, TEXT: text}
                citations = part.native.get(NS, {}).get("citations")
                if citations and profile.replay == "signed":
                    block["citations"] = citations
            case ToolCall() if not message.incomplete:
                block = {"type": TOOL_USE, "id": part.id, "name": part.name,
                         "input": _tool_input(part.arguments)}
            case Opaque() if part.namespace == NS and not message.incomplete:
                if profile.replay == "signed" or plan.may_replay(part.origin):
                    block = part.native[NS]
        if block is not None:
            blocks.append(freeze(block))  # cached and shared by later requests: read-only
            parts.append(position)
    return _Turn(blocks=tuple(blocks), parts=tuple(parts), omitted=omitted,
                 chain_after=(chain.started, chain.cut))


def _user(message: Message) -> tuple[list[Any], list[int]]:
    blocks: list[Any] = []
    parts: list[int] = []
    for position, part in enumerate(message.parts):
        if isinstance(part, ToolResult):
            block: dict[str, Any] = {"type": TOOL_RESULT, "tool_use_id": part.call_id,
                                     "content": part.content}
            if part.is_error:
                block["is_error"] = True
        elif isinstance(part, Text) and part.text:
            block = {"type": TEXT, TEXT: part.text}
        else:
            continue
        blocks.append(block)
        parts.append(position)
    return blocks, parts


def _keeps(index: int, loop: int, last_assistant: int, keep_prior: bool) -> bool:
    return index >= loop or keep_prior or index == last_assistant


def _target_model(plan: ReplayPlan, model: str) -> str:
    return plan.target.model if plan.target is not None and plan.target.model else model


@dataclass(slots=True)
class _Built:
    messages: list[Any] = field(default_factory=list)
    parts: dict[Location, tuple[int, int]] = field(default_factory=dict)
    fingerprints: dict[Location, str] = field(default_factory=dict)
    sent: dict[str, int] = field(default_factory=dict)
    omitted: int = 0

    def add(self, role: str, blocks: Sequence[Any], history_index: int,
            part_indexes: Sequence[int], message: Message) -> None:
        wire_index = len(self.messages)
        self.messages.append({"role": role, "content": blocks})
        for block_index, (block, position) in enumerate(zip(blocks, part_indexes, strict=True)):
            location = (wire_index, block_index)
            self.parts[location] = (history_index, position)
            kind = block.get("type")
            self.sent[kind] = self.sent.get(kind, 0) + 1
            part = message.parts[position]
            if isinstance(part, Reasoning):
                self.fingerprints[location] = part_fingerprint(part)


def encode_messages(history: Sequence[Message], plan: ReplayPlan, model: str,
                    cache: WireCache | None = None) -> tuple[list[Any], list[Any], Index]:
    """The ``system`` blocks, the ``messages`` list and the index for ``history`` under ``plan``."""
    target = _target_model(plan, model)
    loop = loop_start(history)
    last_assistant = max((i for i, m in enumerate(history) if m.role == "assistant"), default=-1)
    keep_prior = not models.is_claude(target) or models.keeps_prior_thinking(target)
    chain = _Chain(binds=models.binds_blocks(target))
    system: list[Any] = []
    built = _Built()
    for index, message in enumerate(history):
        if message.role == "system":
            system.extend({"type": TEXT, TEXT: p.text} for p in message.parts
                          if isinstance(p, Text) and p.text)
            continue
        if message.role != "assistant":
            blocks, parts = _user(message)
            if blocks:
                built.add("user", blocks, index, parts, message)
            continue
        keep = _keeps(index, loop, last_assistant, keep_prior)
        key = (plan.key, keep, chain.started, chain.cut)
        turn = cache.get(message, key) if cache is not None else None
        if turn is None:
            turn = _assistant(message, plan, keep, chain)
            if cache is not None:
                cache.put(message, key, turn)
        else:
            chain.started, chain.cut = turn.chain_after
        built.omitted += turn.omitted
        if turn.blocks:
            built.add("assistant", turn.blocks, index, turn.parts, message)
    index_map = Index(parts=built.parts, fingerprints=built.fingerprints, sent=built.sent,
                      omitted=built.omitted)
    return system, built.messages, index_map


def encode_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        wire: dict[str, Any] = {"name": tool.name, "input_schema": tool.parameters}
        if tool.description:
            wire["description"] = tool.description
        out.append(wire)
    return out


def encode_request(history: Sequence[Message], plan: ReplayPlan, *, model: str,
                   tools: Sequence[ToolSpec] = (), params_: Mapping[str, Any] | None = None,
                   settings: Mapping[str, Any] | None = None, stream: bool = False,
                   cache: WireCache | None = None) -> tuple[dict[str, Any], Index]:
    """The request body for ``history`` on a route, shaped by ``plan``, and its index map."""
    profile: AnthropicProfile = plan.profile
    given = dict(params_ or {})
    system, messages, index = encode_messages(history, plan, model, cache)
    body: dict[str, Any] = {}
    if profile.body_version:
        body["anthropic_version"] = profile.body_version
    if not profile.model_in_url:
        body["model"] = model
    body.update(params.thinking_fields(_target_model(plan, model), given,
                                       {**(settings or {}), **plan.settings}))
    if system:
        body["system"] = system
    body["messages"] = messages
    if tools:
        body["tools"] = encode_tools(tools)
    if stream:
        body["stream"] = True
    body.update(params.passthrough(given))
    return body, index


def wire_summary(index: Index | None) -> dict[str, Any]:
    """What the request log records: blocks sent per kind, thinking blocks left out."""
    if index is None:
        return {"api": API, "blocks": {}, "thinking_omitted": 0}
    return {"api": API, "blocks": dict(sorted(index.sent.items())),
            "thinking_omitted": index.omitted}
