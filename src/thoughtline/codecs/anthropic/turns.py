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
  before it (``chain=new|started|cut``: a rejected block cuts a started chain: preserved-thinking
  page).

The walk state carries the prefix digest (each sent turn's ``visible`` digest chained on the seed:
``binding``), the chain, and the count of stale turns; a turn's ``TurnAfter`` says what it sent
(block kinds and parts, the fingerprint of each thinking block, how much thinking it left out), so
the request log and a rejection are read from the request as sent (``Index``), never rebuilt.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import orjson

from thoughtline.codecs.anthropic import binding, models
from thoughtline.codecs.anthropic.encode import request, system_json, top_tools
from thoughtline.codecs.anthropic.sent import State, TurnAfter, TurnExtra
from thoughtline.codecs.anthropic.walk import (
    Chain,
    Turn,
    assistant_turn,
    compaction_turn,
    in_place,
    keeps,
    keeps_prior,
    part_fingerprint,
    stale,
    system_blocks,
    system_turn,
    target_model,
    user_turn,
)
from thoughtline.codecs.anthropic.wire import SETTING_MISMATCH
from thoughtline.codecs.base import (
    Context,
    Encoded,
    RequestSpec,
    TurnFacts,
    Walk,
    sharer,
    turn_bytes,
    with_role,
)
from thoughtline.messages import Message, Reasoning
from thoughtline.replay import ReplayPlan

KEEP, DROP = "keep", "drop"  # an assistant turn's thinking goes out, or is left out
_CHAIN = " chain="  # the binding chain before the turn, when it can change a block


def _behavior(plan: ReplayPlan, spec: RequestSpec) -> Any:
    merged = {**spec.settings, **plan.settings}
    return merged.get(SETTING_MISMATCH, spec.params.get(SETTING_MISMATCH))


def _loop_and_last(facts: Sequence[TurnFacts]) -> tuple[int, int]:
    """``replay.loop_start`` and the last assistant turn, from the turns' facts."""
    loop = next((i + 1 for i in range(len(facts) - 1, -1, -1) if facts[i].opens), 0)
    last = next((i for i in range(len(facts) - 1, -1, -1) if facts[i].role == "assistant"), -1)
    return loop, last


def _stale(state: State, facts: TurnFacts) -> bool:
    extra = facts.extra
    return (facts.role == "assistant" and isinstance(extra, TurnExtra)
            and stale(extra.stamp, state.running, binds=state.binds, behavior=state.behavior))


def _binds(plan: ReplayPlan) -> bool | None:
    """Does the plan's target bind blocks (None: the plan names no model, the spec does)?"""
    target = plan.target
    return _binds_model(target.model) if target is not None and target.model else None


_binds_model = lru_cache(maxsize=64)(models.binds_blocks)


class Encoder:
    """``TurnEncoder[State, TurnAfter]`` for Anthropic Messages."""

    version = "anthropic-turns-3"  # bump when a turn's bytes or its facts change
    flat = False
    extra_type = TurnExtra
    after_type = TurnAfter

    def facts(self, message: Message) -> TurnFacts:
        role = message.role
        extra: TurnExtra | None = None
        if role == "assistant":
            thinking = list(map(type, message.parts)).count(Reasoning)  # (a final dataclass)
            stamp = binding.stamp_of(message)
            if thinking or stamp is not None:
                extra = TurnExtra.of_fields(stamp, thinking, None)  # (fields in order)
        elif role == "system" and in_place(message) is None:
            extra = TurnExtra(system=",".join(
                orjson.dumps(b).decode() for b in system_blocks([message])))
        return TurnFacts.of(message, extra)

    def start(self, plan: ReplayPlan, spec: RequestSpec, facts: Sequence[TurnFacts]) -> State:
        target = target_model(plan, spec.model)
        keep_prior, binds = keeps_prior(target), models.binds_blocks(target)
        system = tuple(extra.system for index in with_role(facts, "system")
                       if isinstance(extra := facts[index].extra, TurnExtra) and extra.system)
        loop, last = (0, -1) if keep_prior else _loop_and_last(facts)
        running = b""
        if binds:
            running = binding.seed(orjson.loads(system_json(system)), top_tools(spec))
        return State(loop=loop, last=last, keep_prior=keep_prior, binds=binds,
                     behavior=_behavior(plan, spec),
                     chain_matters=binds and bool(plan.fingerprints), system=system,
                     running=running)

    def context(self, state: State, index: int, facts: TurnFacts) -> Context:
        extra = facts.extra
        if facts.role != "assistant" or not isinstance(extra, TurnExtra) or not extra.thinking:
            return ""
        keep = not facts.incomplete and keeps(index, loop=state.loop, last=state.last,
                                              keep_prior=state.keep_prior,
                                              stale=_stale(state, facts))
        context = KEEP if keep else DROP
        if state.chain_matters:
            context += _CHAIN + ("cut" if state.cut else "started" if state.started else "new")
        return context

    def later(self, state: State, context: Context) -> tuple[Context, ...]:
        """A turn that keeps its thinking now loses it in a later request once a new user turn
        opens a loop (a model that keeps only the loop's and the last turn's), or once its prefix
        changes (a model that binds blocks): that form is written with it."""
        keep, chain, rest = str(context).partition(_CHAIN)
        if keep != KEEP or (state.keep_prior and not state.binds):
            return ()
        return (DROP + chain + rest,)

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

    def state_json(self, state: State) -> list[Any]:
        return [state.loop, state.last, state.keep_prior, state.binds, state.behavior,
                state.chain_matters, list(state.system), state.running.hex(), state.started,
                state.cut, state.stale]

    def state_of(self, value: Any) -> State:
        (loop, last, keep_prior, binds, behavior, chain_matters, system, running, started, cut,
         stale_count) = value
        return State(loop=int(loop), last=int(last), keep_prior=bool(keep_prior),
                     binds=bool(binds), behavior=behavior, chain_matters=bool(chain_matters),
                     system=tuple(map(str, system)), running=bytes.fromhex(running),
                     started=bool(started), cut=bool(cut), stale=int(stale_count))

    def advance(self, state: State, facts: TurnFacts, context: Context,
                after: TurnAfter) -> State:
        if not state.binds:  # no prefix to follow, nothing stale, no chain that matters
            return state
        started, cut = state.started or after.started, state.cut or after.cut
        was_stale = _stale(state, facts)
        running = state.running
        if after.visible:
            running = binding.chain(running, bytes.fromhex(after.visible))
        return State(loop=state.loop, last=state.last, keep_prior=state.keep_prior,
                     binds=state.binds, behavior=state.behavior,
                     chain_matters=state.chain_matters, system=state.system, running=running,
                     started=started, cut=cut, stale=state.stale + was_stale)

    def assemble(self, walk: Walk[State, TurnAfter], spec: RequestSpec,
                 plan: ReplayPlan) -> Encoded:
        return request(walk, spec, plan)


#: A turn's after facts, shared by value where they hold no prefix digest (most turns).
_after = sharer(TurnAfter)


def _sent(turn: Turn, plan: ReplayPlan) -> tuple[bytes, TurnAfter]:
    started, cut = turn.chain_after
    wire = turn.wire
    if wire is None:
        return b"", TurnAfter(omitted=turn.omitted, started=started, cut=cut)
    content = wire["content"]
    kinds = ("text",) if type(content) is str else tuple([b["type"] for b in content])
    reasoning, thinking = _thinking(turn.reasoning, content)
    if _binds(plan) is not False:
        return turn_bytes(wire), TurnAfter.of_fields(
            kinds, turn.parts, reasoning, thinking, turn.omitted, binding.visible(wire).hex(),
            started, cut)
    # (no prefix digest where blocks do not bind: most turns share their after facts)
    return turn_bytes(wire), _after(kinds, turn.parts, reasoning, thinking, turn.omitted, "",
                                    started, cut)


def _thinking(parts: tuple[Reasoning | None, ...], content: Any,
              ) -> tuple[tuple[int, ...], tuple[tuple[int, str], ...]]:
    """``TurnAfter.reasoning`` and ``.thinking`` of a turn's blocks: a block gives its part's
    fingerprint unless it is a signed part's thinking sent without the signature (what the
    fingerprint hashes), the only one whose fingerprint is made here."""
    if not parts:
        return (), ()
    reasoning: list[int] = []
    thinking: list[tuple[int, str]] = []
    for block, part in enumerate(parts):
        if part is None:
            continue
        if part.signature and part.kind != "redacted" and "signature" not in content[block]:
            thinking.append((block, part_fingerprint(part)))
        else:
            reasoning.append(block)
    return tuple(reasoning), tuple(thinking)


ENCODER = Encoder()
