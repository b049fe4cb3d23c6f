"""A wire cache for APIs whose request carries one flat array of per-turn items (Chat Completions
``messages``, Responses ``input``), where each turn's items depend on the turn and the plan only.

Each stored turn's items are derived once per plan and a growing history reuses the list of the
prefix it built, so a steady request costs little more than serializing it. A resumed history
(``thoughtline.stored``) is spliced instead: each stored turn goes in as its verified stored bytes
(an ``orjson.Fragment``) and nothing is decoded. ``Tally`` keeps the request log's counts while
encoding, so the log never walks the body again; a spliced turn's counts come from its ``meta``
on first need. The API supplies ``encode_message``, its wire-form version and how a wire item is
counted (``Tally.add``); nothing here knows a field name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import orjson

from thoughtline.codecs.common import SerializedPrefix
from thoughtline.messages import Message
from thoughtline.replay import ReplayPlan, plan_digest
from thoughtline.stored import meta_of

Items = list[dict[str, Any]]


class Tally:
    """Running counts of what went on the wire (the request log's view); ``add`` is the API's."""

    __slots__ = ("assistant", "carriers", "native", "pads", "source", "stored")

    def __init__(self) -> None:
        self.assistant = self.pads = 0
        self.carriers: dict[str, int] = {}
        self.native: dict[str, int] = {}
        # Turns spliced from stored forms whose counts are still to be added (from their meta),
        # on first need: the log wants them after the request is sent, not before.
        self.stored: list[int] = []
        self.source: Any = None

    def add(self, item: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def settle(self) -> Tally:
        """Add the counts of the stored turns (read from their meta) and return self."""
        if self.stored and self.source is not None:
            history, digest = self.source
            for index in self.stored:
                self.merge(history.tally(index, digest))
            self.stored = []
        return self

    def to_json(self) -> dict[str, Any]:
        return {"a": self.assistant, "p": self.pads, "c": self.carriers, "n": self.native}

    def merge(self, raw: Any) -> None:
        """Add counts stored with a wire form (``to_json``'s shape)."""
        if not raw:
            return
        self.assistant += raw.get("a", 0)
        self.pads += raw.get("p", 0)
        for mine, theirs in ((self.carriers, raw.get("c", {})), (self.native, raw.get("n", {}))):
            for key, count in theirs.items():
                mine[key] = mine.get(key, 0) + count

    def copy(self) -> Tally:
        other = type(self)()
        other.assistant, other.pads = self.assistant, self.pads
        other.carriers, other.native = dict(self.carriers), dict(self.native)
        other.stored, other.source = list(self.stored), self.source
        return other


def wire_form(items: Items, message: Message, tally: type[Tally]) -> tuple[bytes, bytes]:
    """One turn's stored wire form: its items as comma-joined JSON (spliced into the array as
    they are), and its ``meta`` (``stored.meta_of``) with the log's counts."""
    counts = tally()
    for item in items:
        counts.add(item)
    meta = {**meta_of(message), "k": counts.to_json()}
    return b",".join(orjson.dumps(item) for item in items), orjson.dumps(meta)


def wire_forms(history: Sequence[Message], start: int, plan: ReplayPlan,
               encode_message: Callable[[Message, ReplayPlan], Items],
               tally: type[Tally]) -> dict[int, tuple[bytes, bytes]]:
    """``StoresWireForms.wire_forms`` for an API whose turns encode on their own."""
    return {index: wire_form(encode_message(history[index], plan), history[index], tally)
            for index in range(start, len(history))}


class SplicingCache:
    """Each stored turn's items per plan, derived once and reused (turns are immutable).

    Turns are keyed by object identity (the cache holds each message so its identity stays valid).
    Per plan it also remembers the last history it encoded and that history's item list: a history
    that only grew since (the normal case, one turn per request) reuses the list and encodes just
    the new turns. Equal messages have equal items, so a prefix that compares equal is safe.
    """

    api: ClassVar[str]
    version: ClassVar[str]  # bump when encode_message's output for a stored turn changes
    tally: ClassVar[type[Tally]]
    encode_message: ClassVar[Callable[[Message, ReplayPlan], Items]]

    def __init__(self) -> None:
        self._entries: dict[tuple[int, Any], tuple[Message, Items]] = {}
        self._last: dict[Any, tuple[list[Message], Items, Tally]] = {}
        self._returned: tuple[list[Any], Tally] | None = None
        self._spliced_list: list[Any] | None = None  # the last returned list, if it has bytes
        self._stored: dict[Any, tuple[Any, int, list[Any], Tally, bool]] = {}
        self._digests: dict[Any, str] = {}
        #: The items earlier requests carried, serialized once (``codecs.common``).
        self.prefix = SerializedPrefix()

    def get(self, message: Message, plan: ReplayPlan) -> Items:
        key = (id(message), plan.key)
        hit = self._entries.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]
        wire = type(self).encode_message(message, plan)
        self._entries[key] = (message, wire)
        return wire

    def items(self, history: Sequence[Message], plan: ReplayPlan) -> list[Any]:
        """The items of ``history`` (a new list; its items are shared, read-only)."""
        base = getattr(history, "base", history)
        if not getattr(base, "decoded", True):
            return self._spliced(history, base, plan)
        turns = list(history)
        last = self._last.get(plan.key)
        start = 0
        wire: list[Any] = []
        tally = self.tally()
        if last is not None and len(last[0]) <= len(turns) and turns[:len(last[0])] == last[0]:
            start, wire, tally = len(last[0]), last[1].copy(), last[2].copy()
        for message in turns[start:]:
            for item in self.get(message, plan):
                wire.append(item)
                tally.add(item)
        self._last[plan.key] = (turns, wire.copy(), tally)  # the caller's list may be edited
        self._returned = (wire, tally)
        self._spliced_list = None
        return wire

    def _spliced(self, history: Any, base: Any, plan: ReplayPlan) -> list[Any]:
        digest = self.plan_digest(plan)
        last = self._stored.get(plan.key)
        if last is not None and last[0] is base and last[1] <= len(base):
            kept = last[3]
            if kept.stored:  # counted from the stored metas once, after the first request
                kept.source = (base, digest)
                kept.settle()
            start, wire, tally, spliced = last[1], list(last[2]), kept.copy(), last[4]
        else:
            start, wire, tally, spliced = 0, [], self.tally(), False
        split = len(base)
        stored = history.stored_wire(digest) if start < split else []
        fragment = orjson.Fragment
        if start == 0 and stored and None not in stored:
            # The usual resume: every stored turn has its form — one pass, in C.
            wire.extend([fragment(data) for data in stored if data])
            tally.stored.extend(range(len(stored)))
            spliced, start = True, len(stored)
        for index in range(start, len(history)):
            if index == split:
                self._stored[plan.key] = (base, split, list(wire), tally.copy(), spliced)
            data = stored[index] if index < len(stored) else None
            if data is not None:
                if data:  # a turn with no items (an empty system message) adds nothing
                    wire.append(fragment(data))
                tally.stored.append(index)
                spliced = True
                continue
            for item in self.get(history[index], plan):
                wire.append(item)
                tally.add(item)
        if len(history) == split:
            self._stored[plan.key] = (base, split, list(wire), tally.copy(), spliced)
        tally.source = (history, digest)
        self._returned = (wire, tally)
        self._spliced_list = wire if spliced else None
        return wire

    def plan_digest(self, plan: ReplayPlan) -> str:
        found = self._digests.get(plan.key)
        if found is None:
            found = self._digests[plan.key] = plan_digest(plan, api=self.api,
                                                          version=self.version)
        return found

    def spliced(self, items: Any) -> bool:
        """Does ``items`` (the list last returned) hold stored wire bytes?"""
        return items is self._spliced_list

    def tally_of(self, items: Any) -> Tally | None:
        """The counts kept while building ``items``, if it is the list last returned."""
        returned = self._returned
        return returned[1] if returned is not None and returned[0] is items else None

    def __len__(self) -> int:
        return len(self._entries)


class SplicedForms:
    """The ``StoresWireForms`` hooks of a codec whose cache is a ``SplicingCache`` (a mixin)."""

    cache: ClassVar[type[SplicingCache]]

    def wire_forms(self, history: Sequence[Message], start: int,
                   plan: ReplayPlan) -> dict[int, tuple[bytes, bytes]]:
        """The stored forms of ``history[start:]`` (``codecs.base.StoresWireForms``)."""
        cache = self.cache
        return wire_forms(history, start, plan, cache.encode_message, cache.tally)

    def plan_digest(self, plan: ReplayPlan) -> str:
        return plan_digest(plan, api=self.cache.api, version=self.cache.version)

