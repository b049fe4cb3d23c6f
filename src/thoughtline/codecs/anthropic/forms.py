"""Stored wire forms of Anthropic turns, and the splice of a resumed history from them.

A turn's form is its wire message as it goes into ``messages`` (a system message's: its
``system`` text blocks, comma-joined), stored per (message, plan) and shared by every session and
branch that holds the message. An assistant turn's blocks depend on more than the turn and the
plan (``walk``): whether it keeps its thinking, and on a model that binds blocks the chain state
and the prefix digest of everything before it. So each form's ``meta`` records what it was
encoded under, and a resumed request recomputes that for each turn from the metas before it —
roles, stamps, visible digests — and compares. A form stored with its thinking may still go out
without it: its thinking blocks are dropped, which is exactly what the encoder sends then. Any
other mismatch, a missing form or a meta that is not ours, and the history is decoded and
encoded as usual. Nothing decoded is spliced, nothing spliced is parsed but a turn that drops
its thinking.

Forms are written assuming no turn is stale (the tools and the mismatch behavior are the
request's, not the plan's); the splice finds out. The meta's keys beside ``stored.meta_of``'s:

- ``b``: each block's type (the request log counts them); ``h``: the positions of the blocks
  made from thinking parts; ``n``: how many thinking parts the turn has;
- ``q``: [keep, chain started, chain cut] the turn was encoded under, ``a``: the chain after it
  (both only with ``n``); ``x``: 1 when one of its parts would cut a started chain;
- ``v``: the digest of the visible wire message (``binding.visible``), ``s``: the turn's stamp
  (both only on a model that binds blocks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import orjson

from thoughtline.codecs.anthropic import binding, models
from thoughtline.codecs.anthropic.walk import (
    DROP_BLOCK,
    Chain,
    Counts,
    Rules,
    Turn,
    Walk,
    WireCache,
    assistant_turn,
    compaction_turn,
    in_place,
    keeps_prior,
    signed_and_rejected,
    step,
    system_blocks,
    system_turn,
    user_turn,
)
from thoughtline.codecs.anthropic.wire import API
from thoughtline.messages import Message, Reasoning, ToolResult
from thoughtline.replay import ReplayPlan
from thoughtline.replay import plan_digest as digest_of
from thoughtline.stored import meta_of

VERSION = "anthropic-2"  # bump when a stored turn's form or meta changes
Meta = dict[str, Any]
Shape = Callable[[int], tuple[str, bool]]  # index -> (role, opens a tool loop)
#: How every stored form of a message begins (``orjson.dumps`` of the wire message, role first);
#: a system message's form is its text blocks.
_MESSAGE = b'{"role":'


@lru_cache(maxsize=64)
def plan_digest(plan: ReplayPlan) -> str:
    return digest_of(plan, api=API, version=VERSION)


# --- writing ------------------------------------------------------------------------------------


def wire_forms(history: Sequence[Message], start: int,
               plan: ReplayPlan) -> dict[int, tuple[bytes, bytes]]:
    """The forms of ``history[start:]``, and of earlier assistant turns that no longer keep
    their thinking now that the history is longer (``codecs.base.StoresWireForms``)."""
    target = plan.target.model if plan.target is not None else ""
    if not target:
        return {}  # the forms would depend on the request's model, which the plan does not name
    keep_prior, binds = keeps_prior(target), models.binds_blocks(target)
    shape = _shape_reader(history)
    loop, last = _loop_and_last(shape, len(history)) if not keep_prior else (0, -1)
    rules = Rules(plan=plan, loop=loop, last=last, keep_prior=keep_prior, binds=binds,
                  behavior=DROP_BLOCK)
    chain = _chain_before(history, start, rules)
    out: dict[int, tuple[bytes, Meta]] = {}
    for index in range(start, len(history)):
        message = history[index]
        if message.role == "assistant":
            out[index] = _assistant_form(message, rules, rules.keep(index, False), chain)
        elif message.role == "system" and (fields := in_place(message)) is not None:
            # A turn-scoped system message stays in ``messages`` (``walk.step``).
            out[index] = _form(system_turn(message, fields), meta_of(message), binds)
        elif message.role == "system":
            out[index] = (b",".join(orjson.dumps(b) for b in system_blocks([message])),
                          meta_of(message))
        else:
            turn = compaction_turn(message, plan) or user_turn(message)
            out[index] = _form(turn, meta_of(message), binds)
    if start and not keep_prior:
        out.update(_refreshed(history, start, rules, shape))
    return {index: (data, orjson.dumps(meta)) for index, (data, meta) in out.items()}


def _form(turn: Turn, meta: Meta, binds: bool) -> tuple[bytes, Meta]:
    if turn.wire is None:
        return b"", meta
    meta["b"] = [block["type"] for block in turn.blocks]
    held = [m for m, part in enumerate(turn.reasoning) if part is not None]
    if held:
        meta["h"] = held
    if binds:
        meta["v"] = binding.visible(turn.wire).hex()
    return orjson.dumps(turn.wire), meta


def _assistant_form(message: Message, rules: Rules, keep: bool,
                    chain: Chain) -> tuple[bytes, Meta]:
    before = [int(keep), int(chain.started), int(chain.cut)]
    turn = assistant_turn(message, rules.plan, keep, chain)
    data, meta = _form(turn, meta_of(message), rules.binds)
    thinking = [p for p in message.parts if isinstance(p, Reasoning)]
    if thinking:
        meta.update(n=len(thinking), q=before, a=[int(v) for v in turn.chain_after])
        if any(signed_and_rejected(p, rules.plan) for p in thinking):
            meta["x"] = 1
    stamp = binding.stamp_of(message) if rules.binds else None
    if stamp is not None:
        meta["s"] = stamp
    return data, meta


def _chain_before(history: Sequence[Message], start: int, rules: Rules) -> Chain:
    chain = Chain(binds=rules.binds)
    if rules.chain_matters:  # a binding model after a rejection: walk what came before
        for index in range(start):
            message = history[index]
            if message.role == "assistant":
                assistant_turn(message, rules.plan, rules.keep(index, False), chain)
    return chain


def _refreshed(history: Sequence[Message], start: int, rules: Rules,
               shape: Shape) -> dict[int, tuple[bytes, Meta]]:
    """Assistant turns that kept their thinking in ``history[:start]`` and no longer do: on a
    model that keeps only the current loop's and the last turn's, which never come back."""
    loop, last = _loop_and_last(shape, start)
    out: dict[int, tuple[bytes, Meta]] = {}
    for index in sorted({*range(loop, start), *([last] if last >= 0 else [])}):
        if shape(index)[0] != "assistant" or rules.keep(index, False):
            continue
        stored = _stored(history, index, plan_digest(rules.plan))
        if stored is None:
            out[index] = _assistant_form(history[index], rules, False, Chain(binds=rules.binds))
        elif stored[1].get("h") and stored[1]["q"][0]:  # (else the same bytes: kept as is)
            out[index] = without_thinking(stored[0], stored[1], rules.binds)
    return out


def _stored(history: Sequence[Message], index: int, digest: str) -> tuple[bytes, Meta] | None:
    """A not yet decoded history's stored form of ``index`` (None: read the message)."""
    base = getattr(history, "base", history)
    if getattr(base, "decoded", True):
        return None
    data = base.wire(index, digest)  # type: ignore[attr-defined]
    return None if data is None else (data, dict(base.meta(index)))  # type: ignore[attr-defined]


def without_thinking(data: bytes, meta: Mapping[str, Any], binds: bool) -> tuple[bytes, Meta]:
    """The form the turn has once it no longer keeps its thinking: the blocks made from
    thinking parts left out (nothing else in it depends on keeping), and its meta."""
    held = set(meta.get("h", ()))
    out = {k: v for k, v in meta.items() if k not in ("b", "h", "v")}
    kept = [b for m, b in enumerate(orjson.loads(data)["content"]) if m not in held]
    recorded = meta["q"]
    out["q"] = [0, recorded[1], recorded[2]]
    out["a"] = [recorded[1], int(bool(recorded[2] or (binds and recorded[1] and meta.get("x"))))]
    if not kept:
        return b"", out
    out["b"] = [kind for m, kind in enumerate(meta["b"]) if m not in held]
    if "v" in meta:
        out["v"] = meta["v"]  # the visible blocks are the same ones
    return orjson.dumps({"role": "assistant", "content": kept}), out


def _opens_loop(message: Message) -> bool:
    return message.role == "user" and any(not isinstance(p, ToolResult) for p in message.parts)


def _shape_reader(history: Sequence[Message]) -> Shape:
    """Each message's (role, opens a tool loop), read from the stored metas of a history that is
    not decoded (the ``stored.meta_of`` keys ``r`` and ``u``), else from the messages."""
    base = getattr(history, "base", history)
    meta = getattr(history, "meta", None)
    if meta is None or getattr(base, "decoded", True):
        return lambda i: (history[i].role, _opens_loop(history[i]))

    def shape(index: int) -> tuple[str, bool]:
        found = meta(index)
        return found["r"], bool(found.get("u"))
    return shape


def _loop_and_last(shape: Shape, end: int) -> tuple[int, int]:
    """``replay.loop_start`` and the last assistant turn of the first ``end`` messages."""
    loop = next((i + 1 for i in range(end - 1, -1, -1) if shape(i)[1]), 0)
    last = next((i for i in range(end - 1, -1, -1) if shape(i)[0] == "assistant"), -1)
    return loop, last


# --- splicing -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Kept:
    """A walk over a resumed history's stored forms, for the next request of the session."""

    base: Any
    split: int
    context: tuple[Any, ...]
    walk: Walk


class _Unfit(Exception):
    """A stored form does not fit this request (or its meta is not ours): decode instead."""


def splice(history: Sequence[Message], base: Any, plan: ReplayPlan, memo: WireCache, *,
           context: tuple[Any, ...], tools: Sequence[Any]) -> Walk | None:
    """The walk of ``history`` (whose ``base`` is a stored history not yet decoded) with every
    stored turn spliced from its form, or None when one does not fit: then decode it."""
    target, behavior, _ = context
    keep_prior, binds = keeps_prior(target), models.binds_blocks(target)
    stored = base.stored_wire(plan_digest(plan))
    size, split = len(history), len(stored)
    tail = [history[i] for i in range(split, size)]
    rules = Rules(plan=plan, loop=0, last=-1, keep_prior=keep_prior, binds=binds,
                  behavior=behavior)
    kept = memo.spliced
    if (keep_prior and isinstance(kept, _Kept) and kept.base is base and kept.split == split
            and kept.context == context and not any(m.role == "system" for m in tail)):
        # Each stored turn keeps its thinking whatever follows: the walk over them still holds.
        walk = kept.walk.copy()
    elif None in stored:
        return None  # a form is missing or failed its digest
    else:
        try:
            if keep_prior and not binds:
                walk = _free_walk(stored, base, context, system_blocks(tail))
            else:
                metas = [base.meta(i) for i in range(split)]
                if not keep_prior:
                    loop, last = _loop_and_last(lambda i: (metas[i]["r"], bool(
                        metas[i].get("u"))) if i < split else (
                        tail[i - split].role, _opens_loop(tail[i - split])), size)
                    rules = replace(rules, loop=loop, last=last)
                walk = _stored_walk(stored, metas, rules, context, system_blocks(tail), tools)
        except (_Unfit, KeyError, IndexError, TypeError, ValueError):
            return None
        # Kept only as the walk of the stored turns alone (a later system message changes the
        # prefix every stored turn is checked against).
        memo.spliced = None if any(m.role == "system" for m in tail) else _Kept(
            base=base, split=split, context=context, walk=walk.copy())
    entries = memo.for_plan(plan.key)
    for offset, message in enumerate(tail):
        step(walk, split + offset, message, rules, memo, entries)
    return walk


def _free_walk(stored: Sequence[bytes], base: Any, context: tuple[Any, ...],
               later_system: list[Any]) -> Walk:
    """The stored turns' walk on a model that keeps every turn's thinking and binds nothing:
    each form fits wherever it is (``wire_forms`` writes every turn keeping its thinking, and
    there is no chain or prefix to follow), so no meta is read but for the log, later."""
    fragment = orjson.Fragment
    system: list[Any] = [fragment(d) for d in stored if d and not d.startswith(_MESSAGE)]
    return Walk(context=context, chain=Chain(binds=False), system=system + later_system,
                messages=[fragment(d) for d in stored if d.startswith(_MESSAGE)],
                counts=Counts(read=lambda: _counted(base, len(stored))))


def _counted(base: Any, size: int) -> tuple[dict[str, int], int]:
    """The blocks per kind and the thinking left out of the first ``size`` stored turns, from
    their meta (as written: each turn as it is spliced)."""
    counts: dict[str, int] = {}
    omitted = 0
    for index in range(size):
        meta = base.meta(index)
        if not isinstance(meta, Mapping):
            continue  # (a meta that is not ours counts nothing: the log is not the request)
        for kind in meta.get("b", ()):
            counts[kind] = counts.get(kind, 0) + 1
        omitted += meta.get("n", 0) - len(meta.get("h", ()))
    return counts, omitted


def _stored_walk(stored: Sequence[bytes], metas: Sequence[Mapping[str, Any]], rules: Rules,
                 context: tuple[Any, ...], later_system: list[Any],
                 tools: Sequence[Any]) -> Walk:
    """The stored turns' walk when a form's fit depends on where it is: each assistant turn's
    key recomputed (stale, keep, chain) and compared with the one it was stored under."""
    fragment = orjson.Fragment
    system: list[Any] = [fragment(data) for data in stored
                         if data and not data.startswith(_MESSAGE)]
    system += later_system
    counts: dict[str, int] = {}
    walk = Walk(context=context, chain=Chain(binds=rules.binds), system=system,
                counts=Counts(known=(counts, 0)))
    walk.running = binding.seed(system, tools) if rules.binds else b""
    for index, (data, meta) in enumerate(zip(stored, metas, strict=True)):
        role = meta["r"]
        if role == "system" and not data.startswith(_MESSAGE):
            continue  # top-level ``system`` blocks (an in-place one is a message)
        kinds = meta.get("b", ())
        if role == "assistant":
            stale = rules.stale(meta.get("s"), walk.running)
            walk.stale += stale
            data, kinds = _fitted(data, meta, rules.keep(index, stale), walk, rules)
        if not data:
            continue
        walk.messages.append(fragment(data))
        for kind in kinds:
            counts[kind] = counts.get(kind, 0) + 1
        if rules.binds:
            walk.running = binding.chain(walk.running, bytes.fromhex(meta["v"]))
    return walk


def _fitted(data: bytes, meta: Mapping[str, Any], keep: bool, walk: Walk,
            rules: Rules) -> tuple[bytes, Sequence[str]]:
    """An assistant turn's stored form as this request sends it (raises ``_Unfit``)."""
    count = meta.get("n", 0)
    if not count:
        return data, meta.get("b", ())  # no thinking: nothing in it depends on where it is
    chain = walk.chain
    recorded = meta["q"]
    if rules.chain_matters and (bool(recorded[1]), bool(recorded[2])) != (chain.started,
                                                                          chain.cut):
        raise _Unfit
    if bool(recorded[0]) == keep or meta.get("i") or (recorded[0] and not meta.get("h")):
        # The same form: an incomplete turn keeps nothing, and one whose thinking went nowhere
        # when kept goes nowhere when not (nor does the chain change differently).
        after = meta["a"]
        chain.started, chain.cut = bool(after[0]), bool(after[1])
        walk.omitted += count - len(meta.get("h", ()))
        return data, meta.get("b", ())
    if keep:
        raise _Unfit  # stored without its thinking, which this request sends
    walk.omitted += count
    chain.cut = chain.cut or (rules.binds and chain.started and bool(meta.get("x")))
    dropped, changed = without_thinking(data, meta, rules.binds)
    return dropped, changed.get("b", ())
