"""What the wire cache reads of a resumed history's stored metas, without decoding a turn.

A stored form's meta is its turn's ``TurnFacts`` and after facts, as the wire cache writes them
(``facts.read_meta``). ``Metas`` reads one encoder's, each distinct meta once (most metas of a
long session differ by their call ids alone, so each distinct after value is read once too).
``Unread`` is a walk's facts in which the stored turns stay their rows until something reads
them: a resumed walk reads a stored turn's facts only where its encoder cannot settle the turn's
context and the state after it from what the turn is stored as (``TurnEncoder.settled``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from thoughtline.codecs.base import Named, TurnEncoder, TurnFacts
from thoughtline.facts import UNREADABLE, Pending, read_meta
from thoughtline.messages import Message

__all__ = ["Metas", "Unread"]

_UNSEEN = object()  # (a meta not looked at yet: None is a meta that holds no facts)


class Metas:
    """One encoder's stored metas as read so far: their facts, and their facts with their after
    facts (None: a meta not this encoder's, whose turn is decoded or encoded instead)."""

    def __init__(self, encoder: TurnEncoder[Any, Any]) -> None:
        self.encoder = encoder
        self.facts: dict[str, TurnFacts | None] = {}
        self.parsed: dict[str, tuple[TurnFacts, Named] | None] = {}
        self._afters: dict[bytes, Named | None] = {}  # after facts by their JSON

    def facts_of(self, meta: str, raw_afters: dict[str, Any] | None = None) -> TurnFacts | None:
        """A meta's facts; its after facts, parsed with them, go to ``raw_afters`` for ``parse``
        (read only where needed)."""
        found = self.facts.get(meta, _UNSEEN)
        if found is _UNSEEN:
            found = self.facts[meta] = read_meta(meta, self.encoder.extra_type, raw_afters)
        return found  # type: ignore[return-value]

    def parse(self, meta: str,
              raw_afters: dict[str, Any] | None = None) -> tuple[TurnFacts, Named] | None:
        """A meta's facts and after facts (from ``raw_afters`` when its facts were read with
        them, else parsed again)."""
        parsed = self.parsed
        if meta not in parsed:
            facts = self.facts.get(meta)
            raw = raw_afters.get(meta) if raw_afters else None
            if facts is None or raw is None:
                fresh: dict[str, Any] = {}
                facts = read_meta(meta, self.encoder.extra_type, fresh)
                raw = fresh.get(meta)
            after = None if facts is None else self._after(raw)
            parsed[meta] = None if facts is None or after is None else (facts, after)
        return parsed[meta]

    def after_of(self, meta: str, raw_afters: dict[str, Any]) -> Named | None:
        """A meta's after facts, its facts read already (``facts_of`` with ``raw_afters``): what
        a resumed walk gives ``advance`` for a turn that moves the state."""
        raw = raw_afters.get(meta)
        if raw is None:
            found = self.parse(meta)
            return None if found is None else found[1]
        return self._after(raw)

    def _after(self, raw: Any) -> Named | None:
        """After facts from their JSON value, one per distinct value (None: not this
        encoder's)."""
        try:
            text = orjson.dumps(raw)
        except TypeError:
            return None
        afters = self._afters
        if text not in afters:
            try:
                afters[text] = self.encoder.after_type.from_json(raw)
            except UNREADABLE:
                afters[text] = None
        return afters[text]

    def row_facts(self, index: int, row: Mapping[str, tuple[bytes, str]],
                  history: Sequence[Message],
                  raw_afters: dict[str, Any] | None = None) -> TurnFacts:
        """The facts of stored turn ``index`` from the metas of its forms (``row``), else from
        the turn itself (which decodes the stored history)."""
        for _, meta in row.values():
            found = self.facts_of(meta, raw_afters)
            if found is not None:
                return found
        return self.encoder.facts(history[index])

    def unread(self, entries: list[Any], texts: list[str], history: Sequence[Message],
               raw_afters: dict[str, Any]) -> Unread:
        """A walk's facts over ``entries`` (facts, or stored rows not read yet, whose first
        metas are ``texts``), read through this reader."""
        return Unread(entries, texts, self, lambda i, row: self.row_facts(i, row, history,
                                                                            raw_afters),
                      raw_afters)


class Unread(Pending):
    """A walk's facts in which a resumed history's stored turns are still their rows (each
    context's (data, meta)): a row's facts are read from its first meta on first use, in place,
    else by ``fallback`` (the row's other metas, then the turn itself)."""

    __slots__ = ("_fallback", "_metas", "_raw_afters", "entries", "metas")

    def __init__(self, entries: list[Any], metas: list[str], reader: Metas, fallback: Any,
                 raw_afters: dict[str, Any]) -> None:
        #: Per turn: its facts, or its stored row (not read yet), and its row's first meta
        self.entries, self.metas = entries, metas
        self._metas, self._fallback, self._raw_afters = reader, fallback, raw_afters

    @property
    def texts(self) -> list[str]:
        return self.metas

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        entry = self.entries[index]
        return entry if type(entry) is TurnFacts else self.at(index % len(self.entries))

    def __iter__(self) -> Any:
        return iter(self.read(len(self.entries)))

    def read(self, upto: int) -> list[Any]:
        """Every entry before ``upto`` read: the entries, now facts up to there."""
        entries = self.entries
        for index in range(upto):
            if type(entries[index]) is not TurnFacts:
                self.at(index)
        return entries

    def at(self, index: int) -> TurnFacts:
        """Entry ``index`` (not negative) read, if it was not."""
        found = self._metas.facts_of(self.metas[index], self._raw_afters)
        if found is None:
            found = self._fallback(index, self.entries[index])
        self.entries[index] = found
        return found
