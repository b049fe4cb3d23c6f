"""The replay rules, turn by turn: one turn on the wire, and what it depends on besides itself.

Owns the replay policy block by block (docs/providers.md "Anthropic"; the extended-thinking and
preserved-thinking pages) and what an assistant turn's blocks depend on besides the turn: whether
it keeps its thinking (``keeps``: the current tool loop, the model's rule for earlier turns, the
last assistant turn; never a turn stamped under another prefix, ``stale``) and the binding chain
state carried from turn to turn (``Chain``). These are the only replay rules: ``turns`` (the
``TurnEncoder``) names which of them a turn's bytes depend on and walks a history with them,
whether its turns are messages or stored wire forms. Nothing here builds a request body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs import foreign
from thoughtline.codecs.anthropic import binding, compaction, models
from thoughtline.codecs.anthropic.profile import AnthropicProfile
from thoughtline.codecs.anthropic.wire import (
    CARRIED,
    CONTENT,
    IN_PLACE,
    ISSUER_ONLY,
    NS,
    REDACTED,
    TEXT,
    THINKING,
    TOOL_RESULT,
    TOOL_USE,
)
from thoughtline.codecs.base import maker, profile_of
from thoughtline.messages import (
    Message,
    Opaque,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    fingerprint,
)
from thoughtline.replay import ReplayPlan

DROP_BLOCK = "drop_block"  # the prefix_mismatch_behavior under which nothing is stale


def part_fingerprint(part: Reasoning) -> str:
    """The identity of a thinking block the API may reject: its type and signature or data."""
    if part.kind == "redacted":
        return fingerprint(REDACTED, part.data or "")
    return fingerprint(THINKING, part.signature or part.text or "")


def block_fingerprint(block: Mapping[str, Any]) -> str:
    """``part_fingerprint`` of the part a thinking block was made from, read from the block
    (a redacted block's data; a thinking block's signature, else its text)."""
    if block.get("type") == REDACTED:
        return fingerprint(REDACTED, block.get("data") or "")
    return fingerprint(THINKING, block.get("signature") or block.get(THINKING) or "")


@dataclass(frozen=True, slots=True)
class Turn:
    """One stored message on the wire: the wire message (None when nothing of it is sent), the
    part behind each block, how many thinking blocks were left out, the binding chain after."""

    wire: Any
    parts: tuple[int, ...]
    #: The thinking part behind each block, if any (empty: no block is made from thinking).
    reasoning: tuple[Reasoning | None, ...] = ()
    omitted: int = 0
    chain_after: tuple[bool, bool] = (False, False)  # the binding chain (started, cut) after

    @property
    def blocks(self) -> Sequence[Any]:
        return binding.blocks_of(self.wire) if self.wire is not None else ()


def make_turn(role: str, message: Message, blocks: list[Any], parts: list[int], omitted: int = 0,
              chain_after: tuple[bool, bool] = (False, False)) -> Turn:
    reasoning: tuple[Reasoning | None, ...] = ()
    if role == "assistant" and any(type(message.parts[i]) is Reasoning for i in parts):
        reasoning = tuple([p if type(p := message.parts[i]) is Reasoning else None
                           for i in parts])
    # Serialized at once (``turns``), never kept: its values are shared with the message.
    wire = {"role": role, "content": blocks} if blocks else None
    return _turn(wire, tuple(parts), reasoning, omitted, chain_after)


#: A ``Turn`` from its fields in order (a cold request makes one per turn), and the turn that
#: sends nothing.
_turn = maker(Turn)
_NOTHING = Turn(wire=None, parts=())


@dataclass(slots=True)
class Chain:
    """Block binding state across turns: has a block gone out, has the chain been cut since."""

    binds: bool
    started: bool = False
    cut: bool = False


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
        # Preserved-thinking page: a block removed from the middle invalidates every later one.
        # (Blocks left out by scope or as incomplete were left out of every request, so later blocks
        # never saw them.)
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


def assistant_turn(message: Message, plan: ReplayPlan, keep: bool, chain: Chain) -> Turn:
    message = foreign.shown(message, NS)  # another API's items as their readable text
    profile = profile_of(plan, AnthropicProfile)
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
                         "input": _tool_input(part.arguments)}
            case Opaque() if part.namespace == NS and not message.incomplete:
                block = _opaque_block(part, plan, profile)
        if block is not None:
            blocks.append(block)
            parts.append(position)
    return make_turn("assistant", message, blocks, parts, omitted, (chain.started, chain.cut))


def _opaque_block(part: Opaque, plan: ReplayPlan, profile: AnthropicProfile) -> Any:
    """A verbatim block in its place. A ``fallback`` or ``compaction`` block goes only to the
    route that made it (same provider and host: docs/providers.md "Anthropic"), byte for byte;
    elsewhere a compaction block's readable summary stands in as text where it has one, and a
    fallback marker is nothing (it only bounds the issuer's thinking chains)."""
    block = part.native[NS]
    if block.get("type") not in ISSUER_ONLY:
        return block if profile.replay == "signed" or plan.may_replay(part.origin) else None
    if _made_by(part.origin, plan):
        return block
    summary = compaction.summary_of(block)
    return {"type": TEXT, TEXT: summary} if summary else None


def in_place(message: Message) -> Mapping[str, Any] | None:
    """A turn-scoped ``role: "system"`` message a client placed inside ``messages`` (kept there,
    never moved into ``system``: prefix-checks page): its message-level fields."""
    found = message.native.get(NS)
    # (most messages have no record here: None is told apart before the abstract Mapping check)
    return found if found is not None and isinstance(found, Mapping) and found.get(IN_PLACE) \
        else None


def _text(part: Text) -> dict[str, Any]:
    """A client's text block as it sent it (``cache_control`` … kept natively)."""
    return {"type": TEXT, TEXT: part.text, **part.native.get(NS, {})}


def system_turn(message: Message, fields: Mapping[str, Any]) -> Turn:
    verbatim = fields.get(CONTENT)
    texts = [(i, p) for i, p in enumerate(message.parts) if isinstance(p, Text) and p.text]
    if not texts:
        return Turn(wire=None, parts=())
    content = verbatim if isinstance(verbatim, str) else [_text(p) for _, p in texts]
    wire = {"role": "system", "content": content,
            **{k: v for k, v in fields.items() if k not in (IN_PLACE, CONTENT)}}
    return Turn(wire=wire, parts=tuple(i for i, _ in texts))


def compaction_turn(message: Message, plan: ReplayPlan) -> Turn | None:
    """A checkpoint that holds this API's own ``compaction`` block (native compaction): the
    block as received, alone, in the assistant turn the API returned it in, where the route may
    read it and is the provider that made it (provider id and host: a compaction is
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
    # (most turns: None, at once)
    record = found if found is not None and isinstance(found, Mapping) else None
    if record is not None and record.get(CARRIED):
        return _NOTHING  # sent with the turn before it
    verbatim = record.get(CONTENT) if record is not None else None
    if isinstance(verbatim, str | list):  # the client's message as sent (images, cache_control)
        wire = {"role": "user", "content": verbatim}
        count = len(binding.blocks_of(wire))
        return Turn(wire=wire, parts=tuple(range(count)))
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


def keeps(index: int, *, loop: int, last: int, keep_prior: bool, stale: bool) -> bool:
    """Does the assistant turn at ``index`` keep its thinking? The current tool loop's turns
    (from ``loop``: ``replay.loop_start``) and the last assistant turn always do; earlier ones
    when the target model keeps prior thinking; never one stamped under another prefix."""
    return (index >= loop or keep_prior or index == last) and not stale


def stale(stamp: str | None, running: bytes, *, binds: bool, behavior: str | None) -> bool:
    """Was the turn stamped under a prefix other than the one it has now (``running``, the
    prefix digest)? Only on a model that binds blocks, unless the API may drop them itself."""
    return binds and behavior != DROP_BLOCK and stamp is not None and stamp != running.hex()
