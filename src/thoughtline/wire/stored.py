"""A resumed session's history that is read, not rebuilt: stored wire bytes first, messages later.

``StoredHistory`` is the ``Sequence[Message]`` a resumed session holds: it knows each visible
message's content id and, for the plan the session was last sent with, the verified wire forms of
each message (per context: ``codecs.base.TurnEncoder``) with their ``meta`` (the turn's
``TurnFacts`` and after facts, under named fields). The core's wire cache (``wire.cache``) splices
those bytes into the next request without decoding anything; the canonical messages are decoded
(and verified) only when something needs them — a plan change, ``sessions show``, export,
compaction — all at once, through the store's ordinary load.

``Joined`` is the history plus the pending turn, without copying either. Neither knows a wire
format: the bytes are the codec's, the facts are neutral.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import overload

from thoughtline.messages import Message, ToolCall, ToolResult
from thoughtline.wire.facts import TurnFacts, read_facts

Shape = tuple[str, Sequence[str], Sequence[str], bool]
#: Each context's (data, meta) of one stored message (a dict: a resumed walk looks its rows up
#: at C speed, ``dict.get`` over all of them).
Forms = dict[str, tuple[bytes, str]]


def shape_of(m: Message) -> Shape:
    """(role, tool-call ids, tool-result ids, incomplete): what the unanswered-call scan reads."""
    calls = [p.id for p in m.parts if type(p) is ToolCall] if m.role == "assistant" else ()
    results = [p.call_id for p in m.parts if type(p) is ToolResult] if m.role == "tool" else ()
    return m.role, calls, results, m.incomplete


class _TwoParts(Sequence[Message]):
    """A sequence that is a first part followed by a second; ``_split`` is the first part's
    length, known without materializing it (a stored history decodes only when indexed)."""

    def _split(self) -> int:
        raise NotImplementedError

    def _first(self) -> Sequence[Message]:
        raise NotImplementedError

    def _second(self) -> Sequence[Message]:
        raise NotImplementedError

    def __len__(self) -> int:
        return self._split() + len(self._second())

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        split = self._split()
        return self._first()[index] if index < split else self._second()[index - split]


class StoredHistory(_TwoParts):
    """Stored messages (decoded on first need) followed by the ones added since loading."""

    def __init__(self, *, ids: Sequence[str], forms: Mapping[str, Forms], plan: str,
                 load: Callable[[], Sequence[Message]],
                 scan: tuple[list[str], dict[int, list[str]]] | None = None,
                 walk: bytes | None = None) -> None:
        self._ids = tuple(ids)
        #: The wire cache's last walk over exactly these messages under ``plan`` (``lastwalk``)
        self.walk = walk
        #: The unanswered-call scan after the stored messages, when it was stored with them:
        #: (where it ends, calls pending there, repairs found) — the next request scans on from it.
        self.scan = None if scan is None else (len(self._ids), scan[0], scan[1])
        self._forms = forms
        #: The plan digest the forms were loaded for.
        self.plan = plan
        self._load = load
        self._messages: list[Message] | None = None
        self._facts: dict[int, TurnFacts] = {}
        self._shapes: list[Shape] | None = None
        self._tail: list[Message] = []
        self._rows: list[Forms] | None = None

    # --- the plain Sequence (decodes what is stored, on first need) ---------------------------

    def _decoded(self) -> list[Message]:
        if self._messages is None:
            loaded = list(self._load())
            if len(loaded) < len(self._ids):
                raise RuntimeError("the stored history shrank while the session was open")
            self._messages = loaded[:len(self._ids)]
        return self._messages

    def _split(self) -> int:
        return len(self._ids)

    def _first(self) -> Sequence[Message]:
        return self._decoded()

    def _second(self) -> Sequence[Message]:
        return self._tail

    def __iter__(self) -> Iterator[Message]:
        return itertools.chain(self._decoded(), self._tail) if self._ids else iter(self._tail)

    def extend(self, messages: Sequence[Message]) -> None:
        self._tail.extend(messages)

    @property
    def decoded(self) -> bool:
        return self._messages is not None or not self._ids

    # --- the read-only fast path --------------------------------------------------------------

    @property
    def ids(self) -> tuple[str, ...]:
        """The content ids of the stored messages (not of the ones added since loading)."""
        return self._ids

    def forms(self, index: int) -> Forms:
        """Stored message ``index``'s verified forms for ``plan``, by context ({}: none)."""
        return self._forms.get(self._ids[index], {})

    def rows(self) -> list[Forms]:
        """Every stored message's forms (``forms``), in order: what a resumed walk reads turn
        by turn. Made once and shared: read it, never edit it."""
        if self._rows is None:
            empty: Forms = {}  # (at C speed: a resume makes one per stored turn)
            self._rows = list(map(self._forms.get, self._ids, itertools.repeat(empty)))
        return self._rows

    def facts(self, index: int) -> TurnFacts:
        """The neutral facts of message ``index``: from a stored form's meta when it has one
        (nothing decoded), else from the message."""
        known = self._facts.get(index)
        if known is None:
            stored = len(self._ids)
            forms = self._forms.get(self._ids[index]) if index < stored else None
            if forms:
                known = read_facts(next(iter(forms.values()))[1])
            if known is None:
                known = TurnFacts.of(self[index])
            self._facts[index] = known
        return known

    def shapes(self, start: int = 0) -> Iterator[Shape]:
        """The shape of every message from ``start`` (see ``shape_of``): the stored ones from
        their facts (nothing decoded), then the ones added since loading."""
        stored = len(self._ids)
        if start < stored:
            yield from itertools.islice(self._stored_shapes(), start, None)
        for message in self._tail[max(start - stored, 0):]:
            yield shape_of(message)

    def _stored_shapes(self) -> list[Shape]:
        if self._shapes is None:
            seen: dict[str, Shape] = {}
            out = []
            forms = self._forms
            for index, mid in enumerate(self._ids):
                found = forms.get(mid)
                shape = seen.get(next(iter(found.values()))[1]) if found else None
                if shape is None:  # (most user turns share one meta: parsed once)
                    shape = self.facts(index).shape
                    if found:
                        seen[next(iter(found.values()))[1]] = shape
                out.append(shape)
            self._shapes = out
        return self._shapes


class Joined(_TwoParts):
    """``base`` followed by ``extra``, without copying ``base`` (which may be a StoredHistory)."""

    def __init__(self, base: Sequence[Message], extra: Sequence[Message]) -> None:
        self.base = base
        self.extra = list(extra)

    @property
    def stored(self) -> StoredHistory | None:
        """The base when it is a resumed session's stored history."""
        return self.base if isinstance(self.base, StoredHistory) else None

    @property
    def decoded(self) -> bool:
        """False while the base is a stored history not yet decoded."""
        stored = self.stored
        return stored is None or stored.decoded

    def _split(self) -> int:
        return len(self.base)

    def _first(self) -> Sequence[Message]:
        return self.base

    def _second(self) -> Sequence[Message]:
        return self.extra

    def __iter__(self) -> Iterator[Message]:
        return itertools.chain(self.base, self.extra)

    def facts(self, index: int) -> TurnFacts:
        """The neutral facts of message ``index`` (a stored one's without decoding it)."""
        stored = self.stored
        if stored is not None and index < len(stored):
            return stored.facts(index)
        return TurnFacts.of(self[index])
