"""Anthropic's turn encoder (``codecs.base.TurnEncoder``): a request built turn by turn, so the
core's wire cache stores each turn's bytes under what they depend on and splices them later.

The rules are ``walk``'s, and only there; this module says which of them a turn's bytes depend on
besides the turn and the plan (its *context*), and carries the rest from turn to turn:

- a user, tool or in-place system turn, a compaction checkpoint and an assistant turn without
  thinking: nothing (context ``""``); a top-level system message adds no bytes of its own (its
  blocks are a ``TurnExtra`` fact: the request's ``system`` and the binding seed are made from
  every one of them before the first turn);
- an assistant turn with thinking: whether it keeps it (``keep``/``drop``: the current tool loop,
  the model's rule for earlier turns, the last assistant turn; never a turn stamped under another
  prefix nor one cut short) and, on a model that binds blocks after a rejection, the binding chain
  before it (``chain=new|started|cut``: a rejected block cuts a started chain, §5).

The walk state carries the prefix digest (each sent turn's ``visible`` digest chained on the seed:
``binding``), the chain, and the count of stale turns; a turn's ``TurnAfter`` says what it sent
(block kinds and parts, the fingerprint of each thinking block, how much thinking it left out), so
the request log and a rejection are read from the request as sent (``Index``), never rebuilt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs.anthropic import binding, models, params
from thoughtline.codecs.anthropic.walk import (
    DROP_BLOCK,
    Chain,
    Turn,
    assistant_turn,
    compaction_turn,
    in_place,
    keeps_prior,
    part_fingerprint,
    system_blocks,
    system_turn,
    target_model,
    user_turn,
)
from thoughtline.codecs.anthropic.wire import API, NS, SETTING_MISMATCH
from thoughtline.codecs.base import Context, Encoded, Named, RequestSpec, TurnFacts, Walk
from thoughtline.codecs.common import merge_params
from thoughtline.messages import Message, Reasoning, ToolSpec
from thoughtline.replay import ReplayPlan

KEEP, DROP = "keep", "drop"  # an assistant turn's thinking goes out, or is left out
_CHAIN = " chain="  # the binding chain before the turn, when it can change a block


@dataclass(frozen=True, slots=True)
class TurnExtra(Named):
    """Anthropic's facts of a turn beside the neutral ones (``TurnFacts.extra``)."""

    #: An assistant turn's prefix stamp (``binding.stamp_of``): stale when it differs from the
    #: prefix digest the turn has now, on a model that binds blocks.
    stamp: str | None = None
    #: How many thinking parts an assistant turn has (none: nothing in it depends on keeping).
    thinking: int = 0
    #: A top-level system message's ``system`` blocks, as comma-joined JSON.
    system: str | None = None


@dataclass(frozen=True, slots=True)
class TurnAfter(Named):
    """What one turn sent, as the walk, the request log and a rejection read it."""

    #: Each block's type, in order.
    kinds: tuple[str, ...] = ()
    #: The message part behind each block.
    parts: tuple[int, ...] = ()
    #: (block position, fingerprint) of each thinking block sent (``walk.part_fingerprint``).
    thinking: tuple[tuple[int, str], ...] = ()
    #: Thinking parts left out (scope, rejection, incomplete, earlier turns).
    omitted: int = 0
    #: The digest of the wire message without its thinking (``binding.visible``), hex; "" when
    #: nothing was sent or the target does not bind blocks.
    visible: str = ""
    #: The binding chain after the turn: has a block gone out, has the chain been cut.
    started: bool = False
    cut: bool = False


@dataclass(frozen=True, slots=True)
class State:
    """The walk state: the rules of the request and what the turns so far carried."""

    loop: int  # the first turn of the current tool loop (0 when every turn keeps its thinking)
    last: int  # the last assistant turn (-1: none, or it does not matter)
    keep_prior: bool  # the target model keeps earlier turns' thinking
    binds: bool  # the target model binds blocks to their prefix
    behavior: str | None  # prefix_mismatch_behavior
    chain_matters: bool  # binds and a fingerprint was rejected: the chain can change a block
    system: tuple[str, ...]  # the top-level system messages' blocks (``TurnExtra.system``)
    running: bytes  # the prefix digest so far (binding models)
    started: bool = False
    cut: bool = False
    stale: int = 0  # turns stamped under another prefix


def _wire_tools(tools: Sequence[ToolSpec]) -> list[Any]:
    out: list[Any] = []
    for tool in tools:
        given = tool.native.get(NS)
        if isinstance(given, Mapping) and given.get("name") == tool.name:
            out.append(given)  # an Anthropic client's own definition, as it sent it
            continue
        wire: dict[str, Any] = {"name": tool.name, "input_schema": tool.parameters}
        if tool.description:
            wire["description"] = tool.description
        out.append(wire)
    return out


def _system_json(system: Sequence[str]) -> bytes:
    return b"[" + ",".join(s for s in system if s).encode() + b"]"


def _behavior(plan: ReplayPlan, spec: RequestSpec) -> Any:
    merged = {**spec.settings, **plan.settings}
    return merged.get(SETTING_MISMATCH, spec.params.get(SETTING_MISMATCH))


def _loop_and_last(facts: Sequence[TurnFacts]) -> tuple[int, int]:
    """``replay.loop_start`` and the last assistant turn, from the turns' facts."""
    loop = next((i + 1 for i in range(len(facts) - 1, -1, -1) if facts[i].opens), 0)
    last = next((i for i in range(len(facts) - 1, -1, -1) if facts[i].role == "assistant"), -1)
    return loop, last


def _stale(state: State, facts: TurnFacts) -> bool:
    """Was this assistant turn stamped under a prefix other than the one it has now?"""
    if not state.binds or state.behavior == DROP_BLOCK or facts.role != "assistant":
        return False
    stamp = facts.extra.stamp if isinstance(facts.extra, TurnExtra) else None
    return stamp is not None and stamp != state.running.hex()


def _binds(plan: ReplayPlan) -> bool | None:
    """Does the plan's target bind blocks (None: the plan names no model, the spec does)?"""
    target = plan.target
    return models.binds_blocks(target.model) if target is not None and target.model else None


class Encoder:
    """``TurnEncoder[State, TurnAfter]`` for Anthropic Messages."""

    version = "anthropic-turns-1"  # bump when a turn's bytes or its facts change
    flat = False
    extra_type = TurnExtra
    after_type = TurnAfter

    def facts(self, message: Message) -> TurnFacts:
        role = message.role
        extra: TurnExtra | None = None
        if role == "assistant":
            thinking = sum(1 for p in message.parts if isinstance(p, Reasoning))
            stamp = binding.stamp_of(message)
            if thinking or stamp is not None:
                extra = TurnExtra(stamp=stamp, thinking=thinking)
        elif role == "system" and in_place(message) is None:
            extra = TurnExtra(system=",".join(
                orjson.dumps(b).decode() for b in system_blocks([message])))
        return TurnFacts.of(message, extra)

    def start(self, plan: ReplayPlan, spec: RequestSpec, facts: Sequence[TurnFacts]) -> State:
        target = target_model(plan, spec.model)
        keep_prior, binds = keeps_prior(target), models.binds_blocks(target)
        system = tuple(f.extra.system for f in facts if f.role == "system"
                       and isinstance(f.extra, TurnExtra) and f.extra.system)
        loop, last = (0, -1) if keep_prior else _loop_and_last(facts)
        running = b""
        if binds:
            running = binding.seed(orjson.loads(_system_json(system)), _wire_tools(spec.tools))
        return State(loop=loop, last=last, keep_prior=keep_prior, binds=binds,
                     behavior=_behavior(plan, spec),
                     chain_matters=binds and bool(plan.fingerprints), system=system,
                     running=running)

    def context(self, state: State, index: int, facts: TurnFacts) -> Context:
        extra = facts.extra
        if facts.role != "assistant" or not isinstance(extra, TurnExtra) or not extra.thinking:
            return ""
        keep = (not facts.incomplete and not _stale(state, facts)
                and (index >= state.loop or state.keep_prior or index == state.last))
        context = KEEP if keep else DROP
        if state.chain_matters:
            context += _CHAIN + ("cut" if state.cut else "started" if state.started else "new")
        return context

    def encode_turn(self, message: Message, plan: ReplayPlan,
                    context: Context) -> tuple[bytes, TurnAfter]:
        role = message.role
        if role == "assistant":
            keep, _, chain = str(context).partition(_CHAIN)
            turn = assistant_turn(message, plan, keep == KEEP,
                                  Chain(binds=bool(chain), started=chain in ("started", "cut"),
                                        cut=chain == "cut"))
        elif role == "system":
            fields = in_place(message)
            if fields is None:
                return b"", TurnAfter()  # its blocks go in ``system`` (``TurnExtra.system``)
            turn = system_turn(message, fields)
        else:
            turn = compaction_turn(message, plan) or user_turn(message)
        return _sent(turn, plan)

    def advance(self, state: State, facts: TurnFacts, context: Context,
                after: TurnAfter) -> State:
        stale = _stale(state, facts)
        running = state.running
        if state.binds and after.visible:
            running = binding.chain(running, bytes.fromhex(after.visible))
        started, cut = state.started or after.started, state.cut or after.cut
        if not stale and running is state.running and (started, cut) == (state.started,
                                                                         state.cut):
            return state
        return State(loop=state.loop, last=state.last, keep_prior=state.keep_prior,
                     binds=state.binds, behavior=state.behavior,
                     chain_matters=state.chain_matters, system=state.system, running=running,
                     started=started, cut=cut, stale=state.stale + stale)

    def assemble(self, walk: Walk[State, TurnAfter], spec: RequestSpec,
                 plan: ReplayPlan) -> Encoded:
        profile = plan.profile
        given = dict(spec.params)
        merged = {**spec.settings, **plan.settings}
        body: dict[str, Any] = {}
        if profile.body_version:
            body["anthropic_version"] = profile.body_version
        if not profile.model_in_url:
            body["model"] = spec.model
        body.update(params.thinking_fields(target_model(plan, spec.model), given, merged))
        if any(walk.state.system):
            body["system"] = orjson.Fragment(_system_json(walk.state.system))
        body["messages"] = walk.fragments
        if spec.tools:
            body["tools"] = _wire_tools(spec.tools)
        if spec.stream:
            body["stream"] = True
        merge_params(body, params.passthrough(given), OWNED)
        return Encoded(raw=orjson.dumps(body), index=Index(walk=walk))


def _sent(turn: Turn, plan: ReplayPlan) -> tuple[bytes, TurnAfter]:
    started, cut = turn.chain_after
    if turn.wire is None:
        return b"", TurnAfter(omitted=turn.omitted, started=started, cut=cut)
    blocks = turn.blocks
    visible = binding.visible(turn.wire).hex() if _binds(plan) is not False else ""
    return orjson.dumps(turn.wire), TurnAfter(
        kinds=tuple(b["type"] for b in blocks), parts=turn.parts,
        thinking=tuple((m, part_fingerprint(p)) for m, p in enumerate(turn.reasoning)
                       if p is not None),
        omitted=turn.omitted, visible=visible, started=started, cut=cut)


#: The body fields ``assemble`` writes itself: a param naming one is left out (``thinking``
#: and ``max_tokens`` are read as parameters by ``params`` and never merged raw).
OWNED = frozenset({"anthropic_version", "model", "system", "messages", "tools", "stream",
                   "output_config.effort"})

Location = tuple[int, int]  # (wire message index, block index) = ``messages.N.content.M``


@dataclass(frozen=True, slots=True)
class Index:
    """A request as sent, turn by turn: wire block → canonical (history index, part index), the
    fingerprint of each thinking block, the blocks per kind, the prefix digest."""

    walk: Walk[State, TurnAfter]

    def _sent(self) -> list[tuple[int, TurnAfter]]:
        """(history index, after) of each turn that went into ``messages``, in order."""
        return [(i, after) for i, (data, after) in enumerate(zip(self.walk.turns,
                                                                 self.walk.afters, strict=True))
                if data]

    @property
    def parts(self) -> dict[Location, tuple[int, int]]:
        return {(n, m): (i, part) for n, (i, after) in enumerate(self._sent())
                for m, part in enumerate(after.parts)}

    @property
    def fingerprints(self) -> dict[Location, str]:
        return {(n, m): fp for n, (_, after) in enumerate(self._sent())
                for m, fp in after.thinking}

    @property
    def sent(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for after in self.walk.afters:
            for kind in after.kinds:
                counts[kind] = counts.get(kind, 0) + 1
        return counts

    @property
    def left_out(self) -> int:
        """Thinking blocks left out of this request."""
        return sum(after.omitted for after in self.walk.afters)

    @property
    def prefix(self) -> str:
        """Binding models: the digest of this request's whole prefix (its answer's stamp)."""
        state = self.walk.state
        return state.running.hex() if state.binds else ""

    @property
    def stale(self) -> int:
        """Stored turns stamped under another prefix (their thinking left out)."""
        return self.walk.state.stale


def wire_summary(index: Index | None) -> dict[str, Any]:
    """What the request log records: blocks sent per kind, thinking blocks left out."""
    if index is None:
        return {"api": API, "blocks": {}, "thinking_omitted": 0}
    out = {"api": API, "blocks": dict(sorted(index.sent.items())),
           "thinking_omitted": index.left_out}
    if index.stale:
        out["stale_turns"] = index.stale  # stamped under another prefix: blocks left out
    return out


ENCODER = Encoder()
