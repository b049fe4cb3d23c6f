"""What the gateway remembers of a tenant's last requests, so that a resent conversation costs
only what is new (issue 45 item 1).

An agent resends its whole conversation on every request. Two things are remembered:

* ``Memos.items(tenant)``: a face's conversion of the client's items (``codecs.face.walk``),
  keyed by a chained digest of the raw items it converted (each item as ``orjson`` serializes
  its parsed value, so ``true`` and ``1`` differ) and by the face's conversion. A request whose
  items start with an earlier request's items resumes from the state that conversion ended in
  and converts only the rest; an item edited anywhere changes every digest from there on, so
  the longest remembered prefix ends before it. Its entries are a tenant's own (the tenant is
  part of every key).
* ``Memos.element``: each converted message's digests in a rehydration chain
  (``rehydrate.Element``), by the message object (the items memo hands the same objects back
  for a resent prefix), so a request's chain is extended over what it resends, not recomputed.
  A digest depends only on the message's content, never on the tenant.

Neither is a source of truth, and what a memo returns equals what computing it again would, so
a restart, an eviction or ``Memos(entries=0)`` (off) changes no request the upstream receives,
only its cost. The store's answers are not remembered: every resent turn is looked up on every
request as before, since a key's newest turn can change under a worker or gateway sharing the
store, and a deleted session must stop rehydrating at once.

Bounds (shared by all tenants, least recently used out first; safe from worker threads):
``entries`` remembered conversions (256) holding at most ``max_bytes`` of serialized items (256 MiB,
counted per entry, so items shared by entries of one conversation count once per entry: the
memory held is below it); ``digests``: 65,536 messages (first in, first out).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs.face import Convert, Walked
from thoughtline.gateway import rehydrate
from thoughtline.messages import Message

ENTRIES = 256
MAX_BYTES = 256 * 1024 * 1024
DIGESTS = 65_536


@dataclass(frozen=True, slots=True)
class _Entry:
    walked: Walked  # never handed out: callers get a copy
    size: int


class Memos:
    """The gateway's memos (see the module's docstring for what and how much)."""

    def __init__(self, *, entries: int = ENTRIES, max_bytes: int = MAX_BYTES,
                 digests: int = DIGESTS) -> None:
        self.entries, self.max_bytes = entries, max_bytes
        self._walks: OrderedDict[tuple[str, str, bytes], _Entry] = OrderedDict()
        self._bytes = 0
        self._digests: dict[int, tuple[Message, rehydrate.Element]] = {}
        self._digests_max = digests if entries else 0
        self._lock = threading.Lock()

    def items(self, tenant: str) -> ItemsMemo | None:
        """``tenant``'s memo of item conversions (None: memos are off)."""
        return ItemsMemo(self, tenant) if self.entries else None

    def element(self, message: Message) -> rehydrate.Element:
        """``rehydrate.element(message)``, remembered by the message object (the oldest
        remembered go first)."""
        found = self._digests.get(id(message))  # (one dict read: atomic, no lock needed)
        if found is not None and found[0] is message:  # held: its id is not reused
            return found[1]
        computed = rehydrate.element(message)
        if self._digests_max:
            with self._lock:
                self._digests[id(message)] = (message, computed)
                while len(self._digests) > self._digests_max:
                    del self._digests[next(iter(self._digests))]
        return computed

    def _find(self, key: tuple[str, str, bytes]) -> Walked | None:
        with self._lock:
            entry = self._walks.get(key)
            if entry is None:
                return None
            self._walks.move_to_end(key)
            return entry.walked.copy()

    def _keep(self, key: tuple[str, str, bytes], walked: Walked, size: int) -> None:
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._walks.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            self._walks[key] = _Entry(walked=walked.copy(), size=size)
            self._bytes += size
            while len(self._walks) > self.entries or self._bytes > self.max_bytes:
                _, dropped = self._walks.popitem(last=False)
                self._bytes -= dropped.size


class ItemsMemo:
    """One tenant's view of the items memo: a ``codecs.face.ItemMemo``."""

    __slots__ = ("_memos", "_tenant")

    def __init__(self, memos: Memos, tenant: str) -> None:
        self._memos, self._tenant = memos, tenant

    def walk(self, items: Sequence[Any], convert: Convert) -> Walked:
        """``items`` converted as ``face.walk`` would, resumed after the longest prefix of them
        an earlier request of this tenant converted with ``convert``."""
        kind = f"{convert.__module__}.{convert.__qualname__}"
        prefixes, size = _prefixes(items)
        start, walked = 0, None
        for count in range(len(items), 0, -1):
            walked = self._memos._find((self._tenant, kind, prefixes[count]))
            if walked is not None:
                start = count
                break
        walked = walked or Walked()
        convert(items, start, walked)
        if start < len(items):
            self._memos._keep((self._tenant, kind, prefixes[-1]), walked, size)
        return walked


def _prefixes(items: Sequence[Any]) -> tuple[list[bytes], int]:
    """``out[k]``: a digest of ``items[:k]`` (each item serialized as parsed); and their size."""
    state = hashlib.sha256(b"thoughtline-items-v1")
    out = [state.digest()]
    size = 0
    for item in items:
        raw = orjson.dumps(item)
        size += len(raw)
        state.update(hashlib.sha256(raw).digest())
        out.append(state.copy().digest())
    return out, size
