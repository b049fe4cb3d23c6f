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

from thoughtline.codecs.anthropic import binding, models, params
from thoughtline.codecs.anthropic.profile import AnthropicProfile
from thoughtline.codecs.anthropic.wire import (
    API,
    NS,
    REDACTED,
    SETTING_MISMATCH,
    TEXT,
    THINKING,
    TOOL_RESULT,
    TOOL_USE,
)
from thoughtline.messages import (
    FrozenDict,
    FrozenList,
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
    """Wire block → canonical (history index, part index), and the fingerprint of thinking ones.

    Kept per wire message (one entry per message, the turns' own tuples shared with the cache);
    the per-block maps are derived when a rejection or the request log asks.
    """

    turns: tuple[tuple[int, _Turn], ...] = ()
    #: Thinking blocks left out of this request (scope, rejection, incomplete, earlier turns).
    omitted: int = 0
    #: Binding models: the digest of this request's whole prefix (the stamp of its answer), and
    #: how many stored turns were stamped under another prefix (their blocks left out).
    prefix: str = ""
    stale: int = 0

    @property
    def parts(self) -> dict[Location, tuple[int, int]]:
        return {(n, m): (history, position) for n, (history, turn) in enumerate(self.turns)
                for m, position in enumerate(turn.parts)}

    @property
    def fingerprints(self) -> dict[Location, str]:
        return {(n, m): part_fingerprint(part) for n, (_, turn) in enumerate(self.turns)
                for m, part in enumerate(turn.reasoning) if part is not None}

    @property
    def sent(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _, turn in self.turns:
            for block in turn.blocks:
                kind = block["type"]
                counts[kind] = counts.get(kind, 0) + 1
        return counts


def part_fingerprint(part: Reasoning) -> str:
    """The identity of a thinking block the API may reject: its type and signature or data."""
    if part.kind == "redacted":
        return fingerprint(REDACTED, part.data or "")
    return fingerprint(THINKING, part.signature or part.text or "")


class WireCache:
    """Per-session memo of stored turns' wire messages (turns are immutable).

    Entries are kept per replay plan (a learned fingerprint makes a new plan, whose turns are
    derived afresh), keyed by the message's identity and what else its wire form depends on.
    """

    __slots__ = ("_last", "_plan", "_turns", "_visible")

    def __init__(self) -> None:
        self._plan: tuple[Any, ...] | None = None
        self._turns: dict[int, tuple[Message, tuple[bool, ...], _Turn]] = {}
        self._visible: dict[int, tuple[_Turn, bytes]] = {}
        #: What encoding the last history left behind: a history that only grew since (one turn
        #: per request) continues from it instead of walking every stored turn again.
        self._last: _Walk | None = None

    def __len__(self) -> int:
        return len(self._turns)

    def for_plan(self, key: tuple[Any, ...]) -> dict[int, tuple[Message, tuple[bool, ...], _Turn]]:
        """The entries valid under the plan ``key`` (all entries are dropped when it changes)."""
        if self._plan != key:
            self._plan, self._turns, self._last = key, {}, None
        return self._turns

    def resume(self, history: Sequence[Message], context: tuple[Any, ...]) -> _Walk | None:
        """A copy of the last walk when ``history`` extends its history under ``context``."""
        last = self._last
        if last is None or last.context != context or len(last.history) > len(history):
            return None
        if list(history[:len(last.history)]) != last.history:  # identity first, in C
            return None
        return last.copy()

    def remember(self, walk: _Walk) -> None:
        self._last = walk.copy()

    def visible(self, turn: _Turn) -> bytes:
        found = self._visible.get(id(turn))
        if found is not None and found[0] is turn:
            return found[1]
        digest = binding.visible(turn.wire)
        self._visible[id(turn)] = (turn, digest)
        return digest


@dataclass(frozen=True, slots=True)
class _Turn:
    """One stored message on the wire: the wire message (None when nothing of it is sent), the
    part behind each block, how many thinking blocks were left out, the binding chain after."""

    wire: Any
    parts: tuple[int, ...]
    reasoning: tuple[Reasoning | None, ...]  # the thinking part behind each block, if any
    omitted: int = 0
    chain_after: tuple[bool, bool] = (False, False)  # the binding chain (started, cut) after

    @property
    def blocks(self) -> Sequence[Any]:
        return self.wire["content"] if self.wire is not None else ()


def _turn(role: str, message: Message, blocks: list[Any], parts: list[int], omitted: int = 0,
          chain_after: tuple[bool, bool] = (False, False)) -> _Turn:
    reasoning = tuple(p if isinstance(p := message.parts[i], Reasoning) else None for i in parts)
    # Cached and shared by later requests: read-only. Blocks hold strings and values that are
    # frozen already (native blocks, tool input), so a shallow freeze is a whole one.
    wire = FrozenDict({"role": role, "content": FrozenList(
        b if type(b) is FrozenDict else FrozenDict(b) for b in blocks)}) if blocks else None
    return _Turn(wire=wire, parts=tuple(parts), reasoning=reasoning, omitted=omitted,
                 chain_after=chain_after)


@dataclass(slots=True)
class _Chain:
    """Block binding state across turns: has a block gone out, has the chain been cut since."""

    binds: bool
    started: bool = False
    cut: bool = False


def _thinking_block(part: Reasoning, plan: ReplayPlan, profile: AnthropicProfile,
                    keep: bool, chain: _Chain) -> dict[str, Any] | None:
    signed = bool(part.signature or part.data) and part.complete
    rejected = bool(plan.fingerprints) and plan.rejected(part_fingerprint(part))
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
                         "input": freeze(_tool_input(part.arguments))}
            case Opaque() if part.namespace == NS and not message.incomplete:
                if profile.replay == "signed" or plan.may_replay(part.origin):
                    block = part.native[NS]
        if block is not None:
            blocks.append(block)
            parts.append(position)
    return _turn("assistant", message, blocks, parts, omitted, (chain.started, chain.cut))


def _user(message: Message) -> _Turn:
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
    return _turn("user", message, blocks, parts)


def _target_model(plan: ReplayPlan, model: str) -> str:
    return plan.target.model if plan.target is not None and plan.target.model else model


def _last_assistant(history: Sequence[Message]) -> int:
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == "assistant":
            return index
    return -1


@dataclass(slots=True)
class _Walk:
    """The state of encoding a history, message by message (and what the next request reuses)."""

    context: tuple[Any, ...]
    history: list[Message] = field(default_factory=list)
    system: list[Any] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    turns: list[tuple[int, _Turn]] = field(default_factory=list)
    omitted: int = 0
    stale: int = 0
    started: bool = False
    cut: bool = False
    running: bytes = b""

    def copy(self) -> _Walk:
        return _Walk(context=self.context, history=list(self.history), system=list(self.system),
                     messages=list(self.messages), turns=list(self.turns), omitted=self.omitted,
                     stale=self.stale, started=self.started, cut=self.cut, running=self.running)


def _last_assistant(history: Sequence[Message]) -> int:
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == "assistant":
            return index
    return -1


def _system_blocks(messages: Sequence[Message]) -> list[Any]:
    return [{"type": TEXT, TEXT: p.text} for m in messages if m.role == "system"
            for p in m.parts if isinstance(p, Text) and p.text]


def encode_messages(history: Sequence[Message], plan: ReplayPlan, model: str,
                    cache: WireCache | None = None, tools: Sequence[Any] = (),
                    behavior: str | None = None) -> tuple[list[Any], list[Any], Index]:
    """The ``system`` blocks, the ``messages`` list and the index for ``history`` under ``plan``.

    On a binding model, a turn stamped under another prefix has its blocks left out — they could
    only fail the prefix check — unless the session lets the API drop them (``drop_block``), which
    it then reports.
    """
    target = _target_model(plan, model)
    loop, last = loop_start(history), _last_assistant(history)
    keep_prior = not models.is_claude(target) or models.keeps_prior_thinking(target)
    chain = _Chain(binds=models.binds_blocks(target))
    memo = cache if cache is not None else WireCache()
    entries = memo.for_plan(plan.key)
    context = (target, behavior, orjson.dumps(tools))
    # Continuing the last walk is exact only when an earlier turn's wire form cannot depend on
    # where the history now ends: every turn keeps its thinking, and no system message was added.
    walk = memo.resume(history, context) if keep_prior else None
    if walk is not None and any(m.role == "system" for m in history[len(walk.history):]):
        walk = None
    if walk is None:
        walk = _Walk(context=context, system=_system_blocks(history))
        walk.running = binding.seed(walk.system, tools) if chain.binds else b""
    chain.started, chain.cut = walk.started, walk.cut
    for index in range(len(walk.history), len(history)):
        message = history[index]
        role = message.role
        if role == "system":
            continue
        key: tuple[bool, ...] = ()
        keep = False
        if role == "assistant":
            old = chain.binds and behavior != "drop_block" and binding.is_stale(message,
                                                                               walk.running)
            walk.stale += old
            keep = (index >= loop or keep_prior or index == last) and not old
            key = (keep, chain.started, chain.cut)
        found = entries.get(id(message))
        if found is not None and found[0] is message and found[1] == key:
            turn = found[2]
            if role == "assistant":
                chain.started, chain.cut = turn.chain_after
        else:
            turn = _assistant(message, plan, keep, chain) if role == "assistant" else _user(
                message)
            entries[id(message)] = (message, key, turn)
        walk.omitted += turn.omitted
        if turn.wire is not None:
            walk.messages.append(turn.wire)
            walk.turns.append((index, turn))
            if chain.binds:
                walk.running = binding.chain(walk.running, memo.visible(turn))
    walk.history, walk.started, walk.cut = list(history), chain.started, chain.cut
    if cache is not None and keep_prior:
        cache.remember(walk)
    index_map = Index(turns=tuple(walk.turns), omitted=walk.omitted, stale=walk.stale,
                      prefix=walk.running.hex() if chain.binds else "")
    return walk.system, walk.messages, index_map


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
    merged = {**(settings or {}), **plan.settings}
    wire_tools = encode_tools(tools) if tools else []
    system, messages, index = encode_messages(history, plan, model, cache, wire_tools,
                                              merged.get(SETTING_MISMATCH,
                                                         given.get(SETTING_MISMATCH)))
    body: dict[str, Any] = {}
    if profile.body_version:
        body["anthropic_version"] = profile.body_version
    if not profile.model_in_url:
        body["model"] = model
    body.update(params.thinking_fields(_target_model(plan, model), given, merged))
    if system:
        body["system"] = system
    body["messages"] = messages
    if wire_tools:
        body["tools"] = wire_tools
    if stream:
        body["stream"] = True
    body.update(params.passthrough(given))
    return body, index


def wire_summary(index: Index | None) -> dict[str, Any]:
    """What the request log records: blocks sent per kind, thinking blocks left out."""
    if index is None:
        return {"api": API, "blocks": {}, "thinking_omitted": 0}
    out = {"api": API, "blocks": dict(sorted(index.sent.items())),
           "thinking_omitted": index.omitted}
    if index.stale:
        out["stale_turns"] = index.stale  # stamped under another prefix: blocks left out
    return out
