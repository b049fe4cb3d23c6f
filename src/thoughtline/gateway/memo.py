"""What the gateway remembers of a tenant's last requests, so that a resent conversation costs
only what is new (issue 45 item 1).

An agent resends its whole conversation on every request. Two things are remembered:

* ``Memos.items(tenant)``: a face's conversion of the client's items (``codecs.face.walk``),
  keyed by a digest of the raw items it converted (of each item's own digest, each item as
  ``orjson`` serializes its parsed value, so ``true`` and ``1`` differ), their count and the
  face's conversion. A request whose items start with an earlier request's items resumes from
  the state that conversion ended in and converts only the rest; an item edited anywhere
  changes the digest of every prefix holding it, so the longest remembered prefix ends before
  it. A request hashes each item once and digests only the prefixes whose count the tenant
  has entries of. Its entries are a tenant's own (the tenant is part of every key).
* ``ItemsMemo.seen``: which leading items an earlier request of the tenant sent and checked
  against the nesting bound (``request.client_request``), so that only the rest is walked.
* ``Memos.element``: each converted message's digests in a rehydration chain
  (``rehydrate.Element``), by the message object (the items memo hands the same objects back
  for a resent prefix), so a request's chain is extended over what it resends, not recomputed.
  A digest depends only on the message's content, never on the tenant. ``Memos.unreasoned``
  likewise: a message without the reasoning the client carried beside a minted value.

Neither is a source of truth, and what a memo returns equals what computing it again would, so
a restart, an eviction or ``Memos(entries=0)`` (off) changes no request the upstream receives,
only its cost. The store's answers are not remembered: every resent turn is looked up on every
request as before, since a key's newest turn can change under a worker or gateway sharing the
store, and a deleted session must stop rehydrating at once.

Bounds (shared by all tenants, least recently used out first; safe from worker threads):
``entries`` remembered conversions (256) holding at most ``max_bytes`` of serialized items
(256 MiB, counted per entry, so items shared by entries of one conversation count once per
entry: the memory held is below it), and as many checked prefixes (their digests only);
``digests``: 65,536 messages for each per-message memo (first in, first out).
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from thoughtline.codecs.face import Convert, Walked
from thoughtline.gateway import rehydrate
from thoughtline.messages import Message, Reasoning

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
        self._walks: OrderedDict[tuple[str, str, int, bytes], _Entry] = OrderedDict()
        self._bytes = 0
        self._digests: dict[int, tuple[Message, rehydrate.Element]] = {}
        self._unreasoned: dict[int, tuple[Message, Message]] = {}
        self._digests_max = digests if entries else 0
        #: (tenant, item count, prefix digest) of items whose nesting a request checked
        self._checked: OrderedDict[tuple[str, int, bytes], None] = OrderedDict()
        #: tenant -> item count -> how many keys above have it: the only prefixes worth a digest
        self._counts: dict[str, dict[int, int]] = {}
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
        self._remember(self._digests, message, computed)
        return computed

    def unreasoned(self, message: Message) -> Message:
        """``message`` without its reasoning parts, remembered by the message object: a resent
        message gives the same object back each time (so its ``element`` is remembered too)."""
        found = self._unreasoned.get(id(message))
        if found is not None and found[0] is message:
            return found[1]
        computed = replace(message, parts=tuple(p for p in message.parts
                                                if not isinstance(p, Reasoning)))
        self._remember(self._unreasoned, message, computed)
        return computed

    def _remember(self, memo: dict[int, tuple[Message, Any]], message: Message,
                  value: Any) -> None:
        if self._digests_max:
            with self._lock:
                memo[id(message)] = (message, value)
                while len(memo) > self._digests_max:
                    del memo[next(iter(memo))]

    def _counted(self, tenant: str, most: int) -> list[int]:
        """The item counts, at most ``most``, of ``tenant``'s remembered prefixes, longest
        first."""
        with self._lock:
            return sorted((c for c in self._counts.get(tenant, ()) if c <= most), reverse=True)

    def _count(self, tenant: str, count: int, change: int) -> None:
        counts = self._counts.setdefault(tenant, {})
        counts[count] = counts.get(count, 0) + change
        if not counts[count]:
            del counts[count]
            if not counts:
                del self._counts[tenant]

    def _was_checked(self, key: tuple[str, int, bytes]) -> bool:
        return key in self._checked  # (one dict read: atomic, no lock needed)

    def _checked_now(self, key: tuple[str, int, bytes]) -> None:
        with self._lock:
            if key not in self._checked:
                self._count(key[0], key[1], 1)
            self._checked[key] = None
            self._checked.move_to_end(key)
            while len(self._checked) > self.entries:
                (tenant, count, _), _ = self._checked.popitem(last=False)
                self._count(tenant, count, -1)

    def _find(self, key: tuple[str, str, int, bytes]) -> Walked | None:
        with self._lock:
            entry = self._walks.get(key)
            if entry is None:
                return None
            self._walks.move_to_end(key)
            return entry.walked.copy()

    def _keep(self, key: tuple[str, str, int, bytes], walked: Walked, size: int) -> None:
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._walks.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            else:
                self._count(key[0], key[2], 1)
            self._walks[key] = _Entry(walked=walked.copy(), size=size)
            self._bytes += size
            while len(self._walks) > self.entries or self._bytes > self.max_bytes:
                (tenant, _, count, _), dropped = self._walks.popitem(last=False)
                self._bytes -= dropped.size
                self._count(tenant, count, -1)


class ItemsMemo:
    """One tenant's view of the items memo for one request: a ``codecs.face.ItemMemo``, and
    what the nesting check may leave out (``seen``)."""

    __slots__ = ("_checked", "_memos", "_prefixes", "_tenant")

    def __init__(self, memos: Memos, tenant: str) -> None:
        self._memos, self._tenant = memos, tenant
        self._prefixes: _Prefixes | None = None
        self._checked: _Prefixes | None = None  # what ``seen`` was asked of

    def seen(self, items: Sequence[Any]) -> int:
        """How many leading ``items`` an earlier request of this tenant sent whose nesting was
        checked: the caller checks the rest before the walk, and the walk then remembers what
        it converts of ``items`` as checked (whatever face converts them)."""
        prefixes = self._checked = self._digests(items)
        for count in self._memos._counted(self._tenant, len(items)):
            if self._memos._was_checked((self._tenant, count, prefixes.digest(count))):
                return count
        return 0

    def walk(self, items: Sequence[Any], convert: Convert) -> Walked:
        """``items`` converted as ``face.walk`` would, resumed after the longest prefix of them
        an earlier request of this tenant converted with ``convert``."""
        kind = f"{convert.__module__}.{convert.__qualname__}"
        prefixes = self._digests(items)
        start, walked = 0, None
        for count in self._memos._counted(self._tenant, len(items)):
            walked = self._memos._find((self._tenant, kind, count, prefixes.digest(count)))
            if walked is not None:
                start = count
                break
        walked = walked or Walked()
        convert(items, start, walked)
        count = len(items)
        digest = prefixes.digest(count)
        if start < count:
            self._memos._keep((self._tenant, kind, count, digest), walked, prefixes.sizes[count])
        if prefixes is self._checked:  # ``items`` are (a prefix of) what ``seen`` was asked of
            self._memos._checked_now((self._tenant, count, digest))
        return walked

    def _digests(self, items: Sequence[Any]) -> _Prefixes:
        """``items``' digests: those this request computed already when ``items`` is (by
        identity, item by item) a prefix of what it digested (a face may walk a slice)."""
        known = self._prefixes
        if known is None or not known.covers(items):
            known = self._prefixes = _Prefixes.of(items)
        return known


_TAG = b"thoughtline-items-v2"
_SIZE = hashlib.sha256().digest_size


@dataclass(frozen=True, slots=True)
class _Prefixes:
    """``items`` digested one by one (each serialized as parsed: ``true`` and ``1`` differ):
    ``digest(k)`` names ``items[:k]``, made only for the ``k`` the memo holds entries of;
    ``sizes[k]``: the serialized bytes of ``items[:k]``."""

    items: tuple[Any, ...]
    hashed: bytes  # each item's own digest, in order
    sizes: list[int]
    made: dict[int, bytes]

    @classmethod
    def of(cls, items: Sequence[Any]) -> _Prefixes:
        raws = list(map(orjson.dumps, items))
        sha256 = hashlib.sha256
        hashed = b"".join([sha256(raw).digest() for raw in raws])
        return cls(items=tuple(items), hashed=hashed, made={},
                   sizes=[0, *itertools.accumulate(map(len, raws))])

    def digest(self, count: int) -> bytes:
        found = self.made.get(count)
        if found is None:
            state = hashlib.sha256(_TAG)
            state.update(memoryview(self.hashed)[:count * _SIZE])
            found = self.made[count] = state.digest()
        return found

    def covers(self, items: Sequence[Any]) -> bool:
        mine = self.items  # (a snapshot: a list changed since is digested again)
        return len(items) <= len(mine) and all(a is b for a, b in zip(items, mine, strict=False))
