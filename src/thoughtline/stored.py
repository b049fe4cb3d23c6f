"""A resumed session's history that is read, not rebuilt: stored wire bytes first, messages later.

``StoredHistory`` is the ``Sequence[Message]`` a resumed session holds when its codec stores wire
forms: it knows each visible message's content id and, for the plan the session was last sent
with, the verified wire bytes and a small ``meta`` record (role, tool-call ids) of each message.
A codec's wire cache splices those bytes into the next request without decoding anything; the
canonical messages are decoded (and verified) only when something needs them — a plan change,
``sessions show``, export, compaction — all at once, through the store's ordinary load.

``Joined`` is the history plus the pending turn, without copying either. Neither knows a wire
format: the bytes are the codec's, ``meta`` is neutral.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

import orjson

from thoughtline.messages import Message, ToolCall, ToolResult


def meta_of(message: Message) -> dict[str, Any]:
    """The neutral facts the core reads without decoding a message."""
    out: dict[str, Any] = {"r": message.role}
    calls = [c.id for c in message.tool_calls]
    if calls:
        out["c"] = calls
    results = [p.call_id for p in message.parts if isinstance(p, ToolResult)]
    if results:
        out["t"] = results
    if message.incomplete:
        out["i"] = 1
    if message.role == "user" and any(not isinstance(p, ToolResult) for p in message.parts):
        out["u"] = 1
    return out


Shape = tuple[str, Sequence[str], Sequence[str], bool]


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

    def __init__(self, *, ids: Sequence[str], forms: Mapping[str, tuple[bytes, str]], plan: str,
                 load: Callable[[], Sequence[Message]],
                 scan: tuple[list[str], dict[int, list[str]]] | None = None,
                 wires: Sequence[bytes | None] | None = None) -> None:
        self._ids = tuple(ids)
        #: The unanswered-call scan after the stored messages, when it was stored with them:
        #: (where it ends, calls pending there, repairs found) — the next request scans on from it.
        self.scan = None if scan is None else (len(self._ids), scan[0], scan[1])
        self._forms = forms
        self._plan = plan
        self._load = load
        self._messages: list[Message] | None = None
        self._metas: dict[int, dict[str, Any]] = {}
        self._shapes: list[Shape] | None = None
        #: ``stored_wire``: each stored message's bytes in order, as loaded (or made on first use)
        self._wires: list[bytes | None] | None = list(wires) if wires is not None else None
        self._tail: list[Message] = []

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

    def wire(self, index: int, plan: str) -> bytes | None:
        """The stored wire bytes of message ``index`` for ``plan`` (None: encode it instead)."""
        if plan != self._plan or index >= len(self._ids):
            return None
        form = self._forms.get(self._ids[index])
        return form[0] if form is not None else None

    def stored_wire(self, plan: str) -> list[bytes | None]:
        """The stored wire bytes of every stored message for ``plan`` (None where missing);
        made once and shared: read it, never edit it."""
        if plan != self._plan:
            return [None] * len(self._ids)
        if self._wires is None:
            forms = self._forms
            self._wires = [form[0] if (form := forms.get(mid)) is not None else None
                           for mid in self._ids]
        return self._wires

    def meta(self, index: int) -> Mapping[str, Any]:
        stored = len(self._ids)
        if index >= stored:
            return meta_of(self._tail[index - stored])
        known = self._metas.get(index)
        if known is None:
            form = self._forms.get(self._ids[index])
            known = orjson.loads(form[1]) if form is not None else meta_of(self[index])
            self._metas[index] = known
        return known

    def shapes(self, start: int = 0) -> Iterator[Shape]:
        """The shape of every message from ``start`` (see ``shape_of``): the stored ones from
        their ``meta`` (nothing decoded), then the ones added since loading."""
        stored = len(self._ids)
        if start < stored:
            yield from itertools.islice(self._stored_shapes(), start, None)
        for message in self._tail[max(start - stored, 0):]:
            yield shape_of(message)

    def _stored_shapes(self) -> list[Shape]:
        if self._shapes is None:
            seen: dict[str, Shape] = {}
            out = []
            forms, loads = self._forms, orjson.loads
            for index, mid in enumerate(self._ids):
                form = forms.get(mid)
                if form is None:
                    meta = self.meta(index)
                    out.append((meta["r"], meta.get("c", ()), meta.get("t", ()),
                                bool(meta.get("i"))))
                    continue
                shape = seen.get(form[1])  # most user turns share one meta
                if shape is None:
                    meta = loads(form[1])
                    shape = seen[form[1]] = (meta["r"], meta.get("c", ()), meta.get("t", ()),
                                             bool(meta.get("i")))
                out.append(shape)
            self._shapes = out
        return self._shapes

    def all_meta_known(self) -> bool:
        return all(mid in self._forms for mid in self._ids)

    def tally(self, index: int, plan: str) -> Mapping[str, Any]:
        """The codec's counts stored with the form of message ``index`` (``{}`` when none)."""
        form = self._forms.get(self._ids[index]) if index < len(self._ids) else None
        if form is None or plan != self._plan:
            return {}
        return self.meta(index).get("k", {})


class Joined(_TwoParts):
    """``base`` followed by ``extra``, without copying ``base`` (which may be a StoredHistory)."""

    def __init__(self, base: Sequence[Message], extra: Sequence[Message]) -> None:
        self.base = base
        self.extra = list(extra)

    def _split(self) -> int:
        return len(self.base)

    def _first(self) -> Sequence[Message]:
        return self.base

    def _second(self) -> Sequence[Message]:
        return self.extra

    def __iter__(self) -> Iterator[Message]:
        return itertools.chain(self.base, self.extra)

    def wire(self, index: int, plan: str) -> bytes | None:
        wire = getattr(self.base, "wire", None)
        return wire(index, plan) if wire is not None and index < len(self.base) else None

    def stored_wire(self, plan: str) -> list[bytes | None]:
        stored = getattr(self.base, "stored_wire", None)
        return stored(plan) if stored is not None else [None] * len(self.base)

    def tally(self, index: int, plan: str) -> Mapping[str, Any]:
        tally = getattr(self.base, "tally", None)
        return tally(index, plan) if tally is not None and index < len(self.base) else {}

    def meta(self, index: int) -> Mapping[str, Any]:
        size = len(self.base)
        meta = getattr(self.base, "meta", None)
        if index < size:
            return meta(index) if meta is not None else meta_of(self.base[index])
        return meta_of(self.extra[index - size])
