"""One stored turn on the wire, and the walk that encodes a history turn by turn.

Owns the replay policy block by block (README "Anthropic"; provider-contracts §5,
provider-updates §1a) and what an assistant turn's blocks depend on besides the turn: whether
it keeps its thinking (``Rules.keep``: the current tool loop, the model's rule for earlier
turns, the last assistant turn; never a turn stamped under another prefix) and the binding
chain state carried from turn to turn (``Chain``). ``encode`` walks a decoded history with it;
``forms`` walks a resumed one from its stored wire forms and continues here for the turns that
have none. Nothing here builds a request body.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from thoughtline.codecs.anthropic import binding, compaction, models
from thoughtline.codecs.anthropic.profile import AnthropicProfile
from thoughtline.codecs.anthropic.wire import (
    CARRIED,
    CONTENT,
    IN_PLACE,
    NS,
    REDACTED,
    TEXT,
    THINKING,
    TOOL_RESULT,
    TOOL_USE,
)
from thoughtline.codecs.common import SerializedPrefix
from thoughtline.messages import (
    FrozenDict,
    FrozenList,
    Message,
    Opaque,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    fingerprint,
    freeze,
)
from thoughtline.replay import ReplayPlan

DROP_BLOCK = "drop_block"  # the prefix_mismatch_behavior under which nothing is stale


def part_fingerprint(part: Reasoning) -> str:
    """The identity of a thinking block the API may reject: its type and signature or data."""
    if part.kind == "redacted":
        return fingerprint(REDACTED, part.data or "")
    return fingerprint(THINKING, part.signature or part.text or "")


@dataclass(frozen=True, slots=True)
class Turn:
    """One stored message on the wire: the wire message (None when nothing of it is sent), the
    part behind each block, how many thinking blocks were left out, the binding chain after."""

    wire: Any
    parts: tuple[int, ...]
    reasoning: tuple[Reasoning | None, ...]  # the thinking part behind each block, if any
    omitted: int = 0
    chain_after: tuple[bool, bool] = (False, False)  # the binding chain (started, cut) after

    @property
    def blocks(self) -> Sequence[Any]:
        return binding.blocks_of(self.wire) if self.wire is not None else ()


def make_turn(role: str, message: Message, blocks: list[Any], parts: list[int], omitted: int = 0,
              chain_after: tuple[bool, bool] = (False, False)) -> Turn:
    reasoning = tuple(p if isinstance(p := message.parts[i], Reasoning) else None for i in parts)
    # Cached and shared by later requests: read-only. Blocks hold strings and values that are
    # frozen already (native blocks, tool input), so a shallow freeze is a whole one.
    wire = FrozenDict({"role": role, "content": FrozenList(
        b if type(b) is FrozenDict else FrozenDict(b) for b in blocks)}) if blocks else None
    return Turn(wire=wire, parts=tuple(parts), reasoning=reasoning, omitted=omitted,
                chain_after=chain_after)


@dataclass(slots=True)
class Chain:
    """Block binding state across turns: has a block gone out, has the chain been cut since."""

    binds: bool
    started: bool = False
    cut: bool = False

    def copy(self) -> Chain:
        return Chain(self.binds, self.started, self.cut)


def thinking_block(part: Reasoning, plan: ReplayPlan, profile: AnthropicProfile,
                   keep: bool, chain: Chain) -> dict[str, Any] | None:
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


def signed_and_rejected(part: Reasoning, plan: ReplayPlan) -> bool:
    """Would this block cut a started chain (``thinking_block``'s second rule)?"""
    return (bool(part.signature or part.data) and part.complete and bool(plan.fingerprints)
            and plan.rejected(part_fingerprint(part)))


def _tool_input(arguments: str) -> Any:
    try:
        value = orjson.loads(arguments) if arguments.strip() else {}
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def assistant_turn(message: Message, plan: ReplayPlan, keep: bool, chain: Chain) -> Turn:
    profile: AnthropicProfile = plan.profile
    blocks: list[Any] = []
    parts: list[int] = []
    omitted = 0
    for position, part in enumerate(message.parts):
        block: Any = None
        match part:
            case Reasoning():
                block = thinking_block(part, plan, profile, keep and not message.incomplete,
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
    return make_turn("assistant", message, blocks, parts, omitted, (chain.started, chain.cut))


def in_place(message: Message) -> Mapping[str, Any] | None:
    """A turn-scoped ``role: "system"`` message a client placed inside ``messages`` (kept there,
    never moved into ``system``, provider-updates §1a): its message-level fields."""
    found = message.native.get(NS)
    return found if isinstance(found, Mapping) and found.get(IN_PLACE) else None


def _text(part: Text) -> dict[str, Any]:
    """A client's text block as it sent it (``cache_control`` … kept natively)."""
    return {"type": TEXT, TEXT: part.text, **part.native.get(NS, {})}


def system_turn(message: Message, fields: Mapping[str, Any]) -> Turn:
    verbatim = fields.get(CONTENT)
    texts = [(i, p) for i, p in enumerate(message.parts) if isinstance(p, Text) and p.text]
    if not texts:
        return Turn(wire=None, parts=(), reasoning=())
    content = verbatim if isinstance(verbatim, str) else FrozenList(
        freeze(_text(p)) for _, p in texts)
    wire = FrozenDict({"role": "system", "content": content,
                       **{k: v for k, v in fields.items() if k not in (IN_PLACE, CONTENT)}})
    return Turn(wire=wire, parts=tuple(i for i, _ in texts), reasoning=(None,) * len(texts))


def compaction_turn(message: Message, plan: ReplayPlan) -> Turn | None:
    """A checkpoint that holds this API's own ``compaction`` block (native compaction): the
    block as received, alone, in the assistant turn the API returned it in, where the route may
    read it and is the provider that made it (provider id and host: §4b/§4c, a compaction is
    readable only by its producer); None elsewhere (the checkpoint's summary stands in)."""
    for position, part in enumerate(message.parts):
        if compaction.is_block(part) and _made_by(part.origin, plan):
            return make_turn("assistant", message, [part.native[NS]], [position])
    return None


def _made_by(origin: Origin | None, plan: ReplayPlan) -> bool:
    target = plan.target
    if origin is None or target is None:
        return plan.may_replay(origin)
    return (plan.may_replay(origin) and origin.provider == target.provider
            and origin.host == target.host)


def user_turn(message: Message) -> Turn:
    found = message.native.get(NS)
    if isinstance(found, Mapping) and found.get(CARRIED):
        return Turn(wire=None, parts=(), reasoning=())  # sent with the turn before it
    verbatim = found.get(CONTENT) if isinstance(found, Mapping) else None
    if isinstance(verbatim, str | list):  # the client's message as sent (images, cache_control)
        wire = FrozenDict({"role": "user", "content": freeze(verbatim)})
        count = len(binding.blocks_of(wire))
        return Turn(wire=wire, parts=tuple(range(count)), reasoning=(None,) * count)
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
    return make_turn("user", message, blocks, parts)


def system_blocks(messages: Sequence[Message]) -> list[Any]:
    """The top-level ``system`` blocks (a client's ``cache_control`` … kept on its own)."""
    return [_text(p) if p.native else {"type": TEXT, TEXT: p.text} for m in messages
            if m.role == "system" and in_place(m) is None
            for p in m.parts if isinstance(p, Text) and p.text]


def target_model(plan: ReplayPlan, model: str) -> str:
    return plan.target.model if plan.target is not None and plan.target.model else model


def keeps_prior(target: str) -> bool:
    return not models.is_claude(target) or models.keeps_prior_thinking(target)


@dataclass(frozen=True, kw_only=True, slots=True)
class Rules:
    """What one request's assistant turns depend on besides themselves."""

    plan: ReplayPlan
    loop: int  # the first turn of the current tool loop (``replay.loop_start``)
    last: int  # the last assistant turn (-1: none)
    keep_prior: bool  # the target model keeps earlier turns' thinking
    binds: bool  # the target model binds blocks to their prefix
    behavior: str | None = None  # prefix_mismatch_behavior

    def stale(self, stamp: str | None, running: bytes) -> bool:
        """Was the turn stamped under a prefix other than the one it has now?"""
        return (self.binds and self.behavior != DROP_BLOCK and stamp is not None
                and stamp != running.hex())

    def keep(self, index: int, stale: bool) -> bool:
        return (index >= self.loop or self.keep_prior or index == self.last) and not stale

    @property
    def chain_matters(self) -> bool:
        """Can the chain state change a block? Only a rejected block can cut it (§5)."""
        return self.binds and bool(self.plan.fingerprints)


class Counts:
    """The blocks per kind, and the thinking blocks left out, of a request's spliced turns:
    known while splicing, or read from the stored forms' meta on first need (the request log
    asks after the request is sent)."""

    __slots__ = ("_known", "_read")

    def __init__(self, known: tuple[dict[str, int], int] | None = None,
                 read: Callable[[], tuple[dict[str, int], int]] | None = None) -> None:
        self._known, self._read = known, read

    def get(self) -> tuple[dict[str, int], int]:
        if self._known is None:
            assert self._read is not None
            self._known, self._read = self._read(), None
        return self._known


@dataclass(slots=True)
class Walk:
    """The state of encoding a history, message by message (and what the next request reuses).

    ``messages`` may hold stored wire forms as ``orjson.Fragment`` (spliced, see ``forms``);
    ``counts`` then counts those (``turns`` holds only the turns encoded from messages).
    """

    context: tuple[Any, ...]
    chain: Chain
    history: list[Message] = field(default_factory=list)
    system: list[Any] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    turns: list[tuple[int, Turn]] = field(default_factory=list)
    omitted: int = 0
    stale: int = 0
    running: bytes = b""
    counts: Counts | None = None

    def copy(self) -> Walk:
        return Walk(context=self.context, chain=self.chain.copy(), history=list(self.history),
                    system=list(self.system), messages=list(self.messages),
                    turns=list(self.turns), omitted=self.omitted, stale=self.stale,
                    running=self.running, counts=self.counts)


Entries = dict[int, tuple[Message, tuple[bool, ...], Turn]]


class WireCache:
    """Per-session memo of stored turns' wire messages (turns are immutable).

    Entries are kept per replay plan (a learned fingerprint makes a new plan, whose turns are
    derived afresh), keyed by the message's identity and what else its wire form depends on.
    """

    __slots__ = ("_last", "_plan", "_turns", "_visible", "prefix", "spliced")

    def __init__(self) -> None:
        self._plan: tuple[Any, ...] | None = None
        self._turns: Entries = {}
        self._visible: dict[int, tuple[Turn, bytes]] = {}
        #: What encoding the last history left behind: a history that only grew since (one turn
        #: per request) continues from it instead of walking every stored turn again.
        self._last: Walk | None = None
        #: A resumed history's walk over its stored forms, kept for the next request (``forms``).
        self.spliced: Any = None
        #: The messages earlier requests carried, serialized once (``codecs.common``).
        self.prefix = SerializedPrefix()

    def __len__(self) -> int:
        return len(self._turns)

    def for_plan(self, key: tuple[Any, ...]) -> Entries:
        """The entries valid under the plan ``key`` (all entries are dropped when it changes)."""
        if self._plan != key:
            self._plan, self._turns, self._last, self.spliced = key, {}, None, None
        return self._turns

    def resume(self, history: Sequence[Message], context: tuple[Any, ...]) -> Walk | None:
        """A copy of the last walk when ``history`` extends its history under ``context``."""
        last = self._last
        if last is None or last.context != context or len(last.history) > len(history):
            return None
        if list(history[:len(last.history)]) != last.history:  # identity first, in C
            return None
        return last.copy()

    def remember(self, walk: Walk) -> None:
        self._last = walk.copy()

    def visible(self, turn: Turn) -> bytes:
        found = self._visible.get(id(turn))
        if found is not None and found[0] is turn:
            return found[1]
        digest = binding.visible(turn.wire)
        self._visible[id(turn)] = (turn, digest)
        return digest


def step(walk: Walk, index: int, message: Message, rules: Rules, memo: WireCache,
         entries: Entries) -> None:
    """Encode ``message`` (at ``index`` of the history) onto ``walk``: the one rule for every
    turn the encoder meets as a message (a decoded history, a resumed one's new turns)."""
    role = message.role
    if role == "system" and in_place(message) is None:
        return
    chain = walk.chain
    key: tuple[bool, ...] = ()
    keep = False
    if role == "assistant":
        old = rules.stale(binding.stamp_of(message), walk.running)
        walk.stale += old
        keep = rules.keep(index, old)
        key = (keep, chain.started, chain.cut)
    found = entries.get(id(message))
    if found is not None and found[0] is message and found[1] == key:
        turn = found[2]
        if role == "assistant":
            chain.started, chain.cut = turn.chain_after
    else:
        turn = (assistant_turn(message, rules.plan, keep, chain) if role == "assistant"
                else system_turn(message, in_place(message) or {}) if role == "system"
                else compaction_turn(message, rules.plan) or user_turn(message))
        entries[id(message)] = (message, key, turn)
    walk.omitted += turn.omitted
    if turn.wire is not None:
        walk.messages.append(turn.wire)
        walk.turns.append((index, turn))
        if rules.binds:
            walk.running = binding.chain(walk.running, memo.visible(turn))
