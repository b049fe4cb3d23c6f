"""Stored wire forms of Gemini turns, and the splice of a resumed history from them (issue 17).

A Gemini turn's wire form is not a function of the turn and the plan alone: a system turn goes
to ``systemInstruction``, not ``contents``; a tool result answers its call by the call's *name*,
found in an earlier model turn, and goes as text when that call went as text; a model turn
depends on the plan (own or foreign, ``sign_every_call``). Stored forms are shared by content id
across sessions and branches, so each form records in its ``meta`` (beside ``stored.meta_of``'s
``r``/``c``/``t``/``i``/``u``) the context it was encoded under, and the splice checks it:

- a model turn: ``"k"``: ``[signatures, dummies, thoughts, calls as text]`` (the request log's
  counts); ``"n"``: its calls' names, aligned with ``"c"``, when its calls can be answered (it
  was not interrupted); ``"x": 1`` when those calls went as text;
- a user or tool turn: ``"a"``: ``[[name, as text], …]`` aligned with ``"t"``, what each result
  was encoded against;
- a system turn: its data is its ``systemInstruction`` parts, comma-joined.

The splice walks the stored metas in order, keeps the calls map the model turns make, and uses a
result turn's form only when what it recorded is what the map says now. A missing form, a meta
it cannot read or any mismatch gives None: the caller encodes the decoded history the ordinary
way. ``sign_every_call`` is part of the digest (``digest``). Nothing here decodes a stored turn
on the happy path; the bytes are spliced as ``orjson.Fragment`` values.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs.gemini.encode import (
    Built,
    Contents,
    Counts,
    Sent,
    WireCache,
    encode_contents,
    own_turn,
    sign_every_of,
    system_parts,
)
from thoughtline.codecs.gemini.wire import API
from thoughtline.messages import Message, ToolResult
from thoughtline.replay import ReplayPlan, plan_digest
from thoughtline.stored import meta_of

#: Bump when a stored turn's bytes or meta change: older forms are then simply not found.
VERSION = "gemini-forms-1"

Offered = list[tuple[str, str, bool]]  # (call id, name, sent as text), in part order


def digest(plan: ReplayPlan, sign_every: bool) -> str:
    """What a stored form depends on: the plan's key and whether every call is signed."""
    return plan_digest(plan, api=API, version=f"{VERSION}/{'every' if sign_every else 'first'}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Spliced:
    """The index of a request spliced from stored forms: the log's counts (from the metas), and
    what a rejection needs to know what the request carried (``resent``)."""

    counts: Counts
    extras: tuple[str, ...]
    history: Sequence[Message]
    size: int
    plan: ReplayPlan
    sign_every: bool

    def resent(self) -> Sent:
        """What the request carried, signatures included: the decoded history encoded again
        (its bytes were those of the spliced request, so is what it carried)."""
        turns = list(itertools.islice(self.history, self.size))
        return encode_contents(turns, self.plan, sign_every=self.sign_every)[2]


# --- writing ----------------------------------------------------------------------------------


def wire_forms(history: Sequence[Message], start: int,
               plan: ReplayPlan) -> dict[int, tuple[bytes, bytes]]:
    """``StoresWireForms.wire_forms``: the forms of ``history[start:]``, each encoded against
    the calls the turns before it made (read back from their stored metas where they have one)."""
    sign_every = sign_every_of(plan.settings)
    built = Built()
    # Indexed, not iterated: a resumed history's new turns are read without decoding the rest.
    turns = {index: history[index] for index in range(start, len(history))}
    needed = {p.call_id for m in turns.values() for p in m.parts if isinstance(p, ToolResult)}
    if needed and start:
        built.calls.update(_calls_before(history, start, needed, plan,
                                         digest(plan, sign_every)))
    builder = Contents(plan, sign_every, built)
    return {index: form_of(builder, message) for index, message in turns.items()}


def form_of(builder: Contents, message: Message) -> tuple[bytes, bytes]:
    """One turn's stored form, encoded by ``builder`` (whose calls map it then extends)."""
    dumps = orjson.dumps
    meta = meta_of(message)
    if message.role == "system":
        return b",".join(dumps(p) for p in system_parts(message)), dumps(meta)
    if message.role == "assistant":
        wire, sent, own = builder.model_turn(message)
        meta["k"] = [len(sent.signatures), sent.dummies, sent.thoughts, sent.as_text]
        if message.tool_calls and not message.incomplete:
            meta["n"] = [call.name for call in message.tool_calls]
            if builder.profile.foreign_calls == "text" and not own:
                meta["x"] = 1
        builder.offer(message, own)
        return dumps(wire), dumps(meta)
    results = [p.call_id for p in message.parts if isinstance(p, ToolResult)]
    if results:
        meta["a"] = [[name, int(text)] for name, text in map(builder.answering, results)]
    wire = builder.user_turn(message)
    return (dumps(wire) if wire is not None else b""), dumps(meta)


def _calls_before(history: Sequence[Message], start: int, needed: set[str], plan: ReplayPlan,
                  plan_id: str) -> dict[str, tuple[str, bool]]:
    """The calls the results in ``needed`` answer, made before ``start``: the latest call with
    each id, found walking back (usually one turn). A turn stored with a form for this plan is
    read from its meta; any other turn from the message itself."""
    found: dict[str, tuple[str, bool]] = {}
    stored = getattr(history, "wire", None)
    meta_at = getattr(history, "meta", None)
    for index in range(start - 1, -1, -1):
        offered = None
        if stored is not None and meta_at is not None and stored(index, plan_id) is not None:
            offered = offered_by(meta_at(index))
        if offered is None:
            offered = _offered_by_message(history[index], plan)
        latest = {call_id: (name, text) for call_id, name, text in offered}
        for call_id in needed & latest.keys():
            found[call_id] = latest[call_id]
        needed = needed - latest.keys()
        if not needed:
            break
    return found


def _offered_by_message(message: Message, plan: ReplayPlan) -> Offered:
    if message.role != "assistant" or message.incomplete or not message.tool_calls:
        return []
    text = plan.profile.foreign_calls == "text" and not own_turn(message, plan)
    return [(call.id, call.name, text) for call in message.tool_calls]


def offered_by(meta: Mapping[str, Any]) -> Offered | None:
    """The calls a stored model turn makes answerable, from its meta (None: unreadable)."""
    ids = meta.get("c") if meta.get("r") == "assistant" and not meta.get("i") else None
    if not ids:
        return []
    names = meta.get("n")
    if not isinstance(names, list) or len(names) != len(ids):
        return None
    text = bool(meta.get("x"))
    return [(call_id, name, text) for call_id, name in zip(ids, names, strict=True)]


# --- splicing ---------------------------------------------------------------------------------


def splice(history: Sequence[Message], plan: ReplayPlan, sign_every: bool,
           cache: WireCache) -> Built | None:
    """What ``history`` builds, its stored turns spliced from their forms (None: it is not a
    resumed history still undecoded, or a stored form is missing or does not fit)."""
    base = getattr(history, "base", history)
    if getattr(base, "decoded", True):
        return None
    key = (plan.key, sign_every)
    kept = cache.spliced.get(key)
    if kept is not None and kept[0] is base:
        split, built = kept[1], kept[2].copy()
    else:
        plan_id = cache.digests.get(key)
        if plan_id is None:
            plan_id = cache.digests[key] = digest(plan, sign_every)
        found = _stored_part(history, plan_id)
        if found is None:
            return None
        split, built = found
        cache.spliced[key] = (base, split, built.copy())
    builder = Contents(plan, sign_every, built)
    token = cache.token(key)
    for index in range(split, len(history)):  # the turns added since the resume, and pending
        builder.add(history[index], token, cache)
    return built


def _stored_part(history: Any, plan_id: str) -> tuple[int, Built] | None:
    base = getattr(history, "base", history)  # the stored turns are the base's first ones
    stored: list[bytes | None] = base.stored_wire(plan_id)
    built = Built()
    contents, system, counts, calls = built.contents, built.system, built.counts, built.calls
    fragment, meta_at = orjson.Fragment, base.meta
    for index, data in enumerate(stored):
        if data is None:
            return None
        meta = meta_at(index)
        role = meta.get("r")
        if role == "assistant":
            tally, ids = meta.get("k"), meta.get("c")
            if not data or type(tally) is not list or len(tally) != 4:
                return None
            if ids and not meta.get("i"):  # what offered_by reads, inline: most turns
                names = meta.get("n")
                if type(names) is not list or len(names) != len(ids):
                    return None
                text = bool(meta.get("x"))
                for call_id, name in zip(ids, names, strict=True):
                    calls[call_id] = (name, text)
            contents.append(fragment(data))
            counts[0] += tally[0]
            counts[1] += tally[1]
            counts[2] += tally[2]
            counts[3] += 1
            counts[4] += tally[3]
        elif role == "system":
            if data:
                system.append(fragment(data))
        elif "t" in meta and not _answers_fit(meta, calls):
            return None
        elif data:
            contents.append(fragment(data))
    return len(stored), built


def _answers_fit(meta: Mapping[str, Any], calls: Mapping[str, tuple[str, bool]]) -> bool:
    """Was each result of this stored turn encoded against the call it answers here?"""
    results, used = meta["t"], meta.get("a")
    if not isinstance(used, list) or len(used) != len(results):
        return False
    for call_id, recorded in zip(results, used, strict=True):
        name, text = calls.get(call_id, (call_id, False))
        if recorded != [name, int(text)]:
            return False
    return True
