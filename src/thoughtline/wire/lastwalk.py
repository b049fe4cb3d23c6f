"""The last walk of a stored history, stored beside its turns' wire forms (issue 44): what a
resumed walk goes on from (``wire.cache``) without decoding a turn or asking a codec rule of one.

It holds every turn's ``TurnFacts`` (context-free: one list for every view) and, per *view* (the
walk's start state: the history as it is, or followed by a user turn), every turn's context key,
its after facts and the state after the last turn, as the plain JSON value the encoder makes of
it (``TurnEncoder.state_json``/``state_of``).

Only the wire cache writes and reads this format: two compact JSON documents on two lines, the
views first and the facts (by column) after, so a walk that never asks for a stored turn's facts
(a flat encoder's) parses only the first; after facts that repeat are stored once and referred
to by position.
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs.base import Context, Named, TurnEncoder, TurnFacts, context_key
from thoughtline.wire.facts import UNREADABLE

__all__ = ["LastWalk", "View", "dump", "start_key"]


@dataclass(frozen=True, kw_only=True, slots=True)
class View:
    """One view's walk over the stored turns: their contexts (as stored), after facts, end."""

    contexts: list[str]
    afters: list[Any]
    end: Any  # the encoder's state after the last stored turn


class LastWalk:
    """A stored last walk, read: its views by start key now, its turns' facts on first need."""

    __slots__ = ("_extra", "_facts", "_raw", "_size", "afters", "views")

    def __init__(self, raw: memoryview, size: int, extra: type[Named] | None,
                 views: dict[str, Any], afters: list[Any]) -> None:
        self._raw, self._size, self._extra = raw, size, extra
        self._facts: list[TurnFacts] | None = None
        self.views = views  # start key -> the view's JSON (read when it applies: ``view``)
        self.afters = afters  # the after facts' JSON, each once

    @classmethod
    def read(cls, encoder: TurnEncoder[Any, Any], raw: bytes, size: int) -> LastWalk | None:
        """The last walk ``raw`` holds for ``size`` stored turns (None: not one this cache wrote
        for them, or not this encoder's: the ordinary load runs)."""
        cut = raw.find(b"\n")  # (``dump``: the views, a newline, the facts)
        if cut < 0:
            return None
        try:
            doc = orjson.loads(memoryview(raw)[:cut])
            views, afters = doc["views"], doc["afters"]
        except (*UNREADABLE, IndexError):
            return None
        if doc.get("size") != size or type(views) is not dict or type(afters) is not list:
            return None
        return cls(memoryview(raw)[cut + 1:], size, encoder.extra_type, views, afters)

    def facts(self) -> list[TurnFacts] | None:
        """The stored turns' facts (None: they do not read: the turns are decoded for them)."""
        if self._facts is None:
            # (thousands of small values, as long-lived as the session, in no cycle: the cyclic
            # collector would rescan them while they are made, as in ``store.engine``)
            collecting = gc.isenabled()
            gc.disable()
            try:
                facts = _facts_of(orjson.loads(self._raw), self._extra)
            except (*UNREADABLE, IndexError):
                return None
            finally:
                if collecting:
                    gc.freeze()
                    gc.enable()
            if len(facts) != self._size:
                return None
            self._facts = facts
        return self._facts

    def view(self, encoder: TurnEncoder[Any, Any], start: object) -> View | None:
        """The view that starts in ``start`` (None: no walk of these turns started there); any
        view of a flat encoder's (its turns do not depend on the state)."""
        found = self.views.get(start_key(encoder, start))
        if found is None and encoder.flat and self.views:
            found = next(iter(self.views.values()))
        if found is None:
            return None
        try:
            table = [encoder.after_type.from_json(a) for a in self.afters]
            contexts, afters = found["contexts"], list(map(table.__getitem__, found["afters"]))
            end = start if encoder.flat else encoder.state_of(found["end"])
        except (*UNREADABLE, IndexError):
            return None
        if type(contexts) is not list or not len(contexts) == len(afters) == self._size:
            return None
        return View(contexts=contexts, afters=afters, end=end)


def start_key(encoder: TurnEncoder[Any, Any], start: object) -> str:
    """A start state as a view is stored under: its JSON value, compact."""
    return orjson.dumps(encoder.state_json(start)).decode()


def _indexed(values: Sequence[Any], table: dict[Any, int]) -> list[int]:
    """Each value's position in ``table`` (added at its end when new)."""
    out = []
    for value in values:
        try:
            out.append(table.setdefault(value, len(table)))
        except TypeError:  # (an unhashable value: keyed by its JSON)
            out.append(table.setdefault(orjson.dumps(value.to_json()), len(table)))
    return out


def _json(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, bytes) else value.to_json()


def dump(encoder: TurnEncoder[Any, Any], facts: Sequence[TurnFacts],
         views: Sequence[tuple[object, Sequence[Context], Sequence[Named], object]]) -> bytes:
    """The stored form of the walks of one stored history: ``facts`` of its turns, and per view
    (start, contexts, after facts, end state) over the same turns."""
    after_table: dict[Any, int] = {}
    out: dict[str, Any] = {}
    for start, contexts, afters, end in views:
        out[start_key(encoder, start)] = {
            "contexts": [context_key(c) for c in contexts],
            "afters": _indexed(afters, after_table),
            "end": None if encoder.flat else encoder.state_json(end)}
    columns = {"role": [f.role for f in facts], "calls": [f.calls for f in facts],
               "results": [f.results for f in facts],
               "incomplete": [f.incomplete for f in facts], "opens": [f.opens for f in facts],
               "extra": [None if f.extra is None else f.extra.to_json() for f in facts]}
    return b"%b\n%b" % (orjson.dumps({"size": len(facts), "views": out, "afters": [
        _json(a) for a in after_table]}), orjson.dumps(columns))


_tuple = tuple.__new__  # (a named tuple from its values in order, in one C call)


def _facts_of(columns: dict[str, list[Any]], extra_type: type[Named] | None,
              ) -> list[TurnFacts]:
    """The turns' facts from their columns (as ``dump`` wrote them: one list per field)."""
    roles, extras = columns["role"], columns["extra"]
    if not all(type(role) is str for role in roles):
        raise TypeError("a turn's role is a string")
    made = [None if e is None or extra_type is None else extra_type.from_json(e)
            for e in extras] if any(e is not None for e in extras) else extras
    rows = zip(roles, map(tuple, columns["calls"]), map(tuple, columns["results"]),
               map(bool, columns["incomplete"]), map(bool, columns["opens"]), made, strict=True)
    return list(map(_tuple, itertools.repeat(TurnFacts), rows))
