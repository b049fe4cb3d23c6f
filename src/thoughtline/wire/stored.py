"""A resumed session's history that is read, not rebuilt: stored wire bytes first, messages later.

``StoredHistory`` is the ``Sequence[Message]`` a resumed session holds: each visible message's
content id and its verified wire forms (per context) for the plan it was last sent with, which
the wire cache splices without decoding anything. The messages are decoded (and verified) only
when something needs them — a plan change, ``sessions show``, export, compaction — all at once,
through the store's ordinary load. ``Joined`` is the history plus the pending turn, uncopied.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import overload

from thoughtline.messages import Message, ToolCall, ToolResult
from thoughtline.wire.facts import Shape, TurnFacts, read_meta

#: Each context's (data, meta) of one stored message (a dict: a resumed walk looks its rows up
#: at C speed, ``dict.get`` over all of them).
Forms = dict[str, tuple[bytes, str]]


def shape_of(m: Message) -> Shape:
    """``TurnFacts.of(m).shape``, made directly: the scan reads it per message (cold builds)."""
    calls = [p.id for p in m.parts if type(p) is ToolCall] if m.role == "assistant" else ()
    results = [p.call_id for p in m.parts if type(p) is ToolResult] if m.role == "tool" else ()
    return m.role, calls, results, m.incomplete


class _TwoParts(Sequence[Message]):
    """A first part followed by ``extra``; ``_split`` is the first part's length (a stored
    history knows it without decoding: it decodes only when indexed)."""

    extra: list[Message]

    def _first(self) -> Sequence[Message]:
        raise NotImplementedError

    def _split(self) -> int:
        return len(self._first())

    def __len__(self) -> int:
        return self._split() + len(self.extra)

    def __iter__(self) -> Iterator[Message]:
        return itertools.chain(self._first(), self.extra)

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
        return self._first()[index] if index < split else self.extra[index - split]


class StoredHistory(_TwoParts):
    """Stored messages (decoded on first need) followed by the ones added since loading."""

    def __init__(self, *, ids: Sequence[str], forms: Mapping[str, Forms], plan: str,
                 load: Callable[[], Sequence[Message]],
                 scan: tuple[list[str], dict[int, list[str]]] | None = None,
                 walk: bytes | None = None) -> None:
        #: The content ids of the stored messages (not of the ones added since loading).
        self.ids = tuple(ids)
        #: The wire cache's last walk over exactly these messages under ``plan`` (``lastwalk``)
        self.walk = walk
        #: The unanswered-call scan after the stored messages, when it was stored with them:
        #: (where it ends, calls pending there, repairs found) — the next request scans on from it.
        self.scan = None if scan is None else (len(self.ids), scan[0], scan[1])
        self._forms = forms
        #: The plan digest the forms were loaded for.
        self.plan = plan
        self._load = load
        self._messages: list[Message] | None = None
        self._facts: dict[int, TurnFacts] = {}
        self.extra: list[Message] = []  # the messages added since loading
        self._rows: list[Forms] | None = None

    def _first(self) -> list[Message]:
        if self._messages is None:
            loaded = list(self._load()) if self.ids else []
            if len(loaded) < len(self.ids):
                raise RuntimeError("the stored history shrank while the session was open")
            self._messages = loaded[:len(self.ids)]
        return self._messages

    def _split(self) -> int:
        return len(self.ids)

    def extend(self, messages: Sequence[Message]) -> None:
        self.extra.extend(messages)

    @property
    def decoded(self) -> bool:
        return self._messages is not None or not self.ids

    # --- the read-only fast path --------------------------------------------------------------

    def rows(self) -> list[Forms]:
        """Every stored message's verified forms for ``plan``, by context ({}: none), in order:
        what a resumed walk reads turn by turn. Made once and shared: read it, never edit it."""
        if self._rows is None:
            empty: Forms = {}  # (at C speed: a resume makes one per stored turn)
            self._rows = list(map(self._forms.get, self.ids, itertools.repeat(empty)))
        return self._rows

    def facts(self, index: int) -> TurnFacts:
        """The neutral facts of message ``index``: from a stored form's meta when it has one
        (nothing decoded), else from the message."""
        known = self._facts.get(index)
        if known is None:
            forms = self._forms.get(self.ids[index]) if index < len(self.ids) else None
            read = read_meta(next(iter(forms.values()))[1]) if forms else None
            known = read[0] if read is not None else TurnFacts.of(self[index])
            self._facts[index] = known
        return known

    def shapes(self, start: int = 0) -> Iterator[Shape]:
        """Each message's shape from ``start`` (``TurnFacts.shape``; a stored one's undecoded)."""
        return (self.facts(index).shape for index in range(start, len(self)))


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
        return not isinstance(self.base, StoredHistory) or self.base.decoded

    def _first(self) -> Sequence[Message]:
        return self.base

    def facts(self, index: int) -> TurnFacts:
        """The neutral facts of message ``index`` (a stored one's without decoding it)."""
        stored = self.stored
        if stored is not None and index < len(stored):
            return stored.facts(index)
        return TurnFacts.of(self[index])
