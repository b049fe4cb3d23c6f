"""The gateway's rehydration index: store a returned turn with its lookup keys, find it again.

Owns the ``rehydration`` table (migration ``create_rehydration_index``): rows ``(tenant, kind,
lookup_key, session_id, message_id)``. A turn is written like any history message (content-addressed
skeleton and verified payloads, see ``codec``) in the same transaction as its index rows, so a turn
that was answered to a client is always findable after a crash. A lookup is one indexed query per
key and loads just that message, digests verified; a payload that fails verification makes the hit
unusable (the caller falls back to what the client sent), never a half turn.

``RehydrationStore`` is mixed into ``SqlStore``: every backend gets the same portable SQL.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from thoughtline.errors import NotFound, StoreError
from thoughtline.messages import Message
from thoughtline.store import codec, history
from thoughtline.store.records import StoredMessage

if TYPE_CHECKING:
    from thoughtline.store.db import Database, Tx

#: Lookup-key kinds: a tool-call id of the turn; the digest of its visible content in its place in
#: the conversation (everything the client saw before it); the digest of its visible content alone;
#: the reference a value the gateway minted names (``gateway.mint``); the digest of the
#: conversation id a client names (its newest turn: which session that conversation is).
CALL, CONTEXT, CONTENT, MINT, NAMED = "call", "context", "content", "mint", "named"

_CHUNK = 400  # keys per IN (...) list, well under every backend's parameter limit


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexKey:
    kind: str
    key: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Rehydrated:
    """A stored turn found by a lookup key, and the session it was answered in."""

    session_id: str
    message_id: str
    message: Message


class RehydrationStore:
    """Store methods of the rehydration index (needs ``self._db`` from ``SqlStore``)."""

    _db: Database
    _verified_turns: _Verified | None

    def append_indexed(self, session_id: str, messages: Sequence[Message], *, tenant: str,
                       keys: Sequence[IndexKey],
                       expect_turns: int | None = None) -> list[StoredMessage]:
        """Append ``messages`` and index the last one under ``keys``, atomically; with
        ``expect_turns``, raise ``HeadMoved`` (writing nothing) unless the session holds
        exactly that many turns (as ``Store.append``)."""
        now = time.time()
        with self._db.transaction(write=True) as tx:
            if not tx.execute("UPDATE sessions SET updated_at = ? WHERE id = ?",
                              (now, session_id)):
                raise NotFound(f"no session {session_id!r}")
            history.check_head(tx, session_id, expect_turns)
            stored = history.append(tx, session_id, messages, now)
            if stored and keys:
                index_turn(tx, tenant, session_id, stored[-1].id, keys, now)
        if stored:
            self._verified().put(stored[-1].id, stored[-1].message)
        return stored

    def rehydrate(self, tenant: str, keys: Sequence[IndexKey | None], *,
                  session_id: str | None = None) -> list[Rehydrated | None]:
        """The newest stored turn for each key (None: no match, or it failed verification).

        One indexed query finds every key's newest row (of this tenant, and this session when
        given — turns it inherits as a branch count as its own); the turns it names are loaded
        and verified once (content-addressed, so a turn verified before is taken from memory).
        """
        wanted = {(k.kind, k.key) for k in keys if k is not None}
        if not wanted:
            return [None] * len(keys)
        with self._db.transaction(write=False) as tx:
            newest = _newest(tx, tenant, wanted, session_id)
            messages = _load(tx, {message_id for _, message_id in newest.values()},
                             self._verified())
        out: list[Rehydrated | None] = []
        for key in keys:
            row = newest.get((key.kind, key.key)) if key is not None else None
            message = messages.get(row[1]) if row is not None else None
            out.append(None if row is None or message is None else Rehydrated(
                session_id=row[0], message_id=row[1], message=message))
        return out

    def _verified(self) -> _Verified:
        memo = getattr(self, "_verified_turns", None)
        if memo is None:
            memo = _Verified(_MEMO_SIZE)
            self._verified_turns = memo
        return memo


class _Verified:
    """Turns already loaded and verified, by message id (a digest of their content).

    Not a cache of the index: every lookup still asks the index (tenancy and sessions are
    decided there); this only spares re-reading and re-verifying immutable content.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[str, Message] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, message_id: str) -> Message | None:
        with self._lock:
            found = self._items.get(message_id)
            if found is not None:
                self._items.move_to_end(message_id)
            return found

    def put(self, message_id: str, message: Message) -> None:
        with self._lock:
            self._items[message_id] = message
            self._items.move_to_end(message_id)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_MEMO_SIZE = 4096  # turns kept per store object


def index_turn(tx: Tx, tenant: str, session_id: str, message_id: str,
               keys: Sequence[IndexKey], now: float) -> None:
    """Index the stored turn ``message_id`` of ``session_id`` under ``keys`` (inside ``tx``)."""
    tx.executemany(
        "INSERT INTO rehydration (tenant, kind, lookup_key, session_id, message_id, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, kind, lookup_key, session_id) "
        "DO UPDATE SET message_id = excluded.message_id, created_at = excluded.created_at",
        [(tenant, k.kind, k.key, session_id, message_id, now) for k in keys])


def _newest(tx: Tx, tenant: str, wanted: set[tuple[str, str]],
            session_id: str | None) -> dict[tuple[str, str], tuple[str, str]]:
    """(kind, key) -> (session id, message id) of the newest row for each wanted key.

    One query per kind asked (at most three), each an ``IN`` list on the
    ``(tenant, kind, lookup_key, …)`` index.
    """
    found: dict[tuple[str, str], tuple[float, str, str]] = {}
    lineage: list[str] = []
    if session_id is not None:  # the session and the ancestors whose turns it shows
        lineage = [sid for sid, _ in history.chain(tx, session_id)] or [session_id]
    for kind in sorted({kind for kind, _ in wanted}):
        ordered = sorted(key for k, key in wanted if k == kind)
        for start in range(0, len(ordered), _CHUNK):
            chunk = ordered[start:start + _CHUNK]
            sql = (f"SELECT lookup_key, session_id, message_id, created_at FROM rehydration "
                   f"WHERE tenant = ? AND kind = ? "
                   f"AND lookup_key IN ({', '.join('?' * len(chunk))})")
            params: list[str] = [tenant, kind, *chunk]
            if lineage:
                sql += f" AND session_id IN ({', '.join('?' * len(lineage))})"
                params.extend(lineage)
            for key, session, message_id, created in tx.all(sql, params):
                seen = found.get((kind, key))
                if seen is None or created > seen[0]:
                    found[(kind, key)] = (created, session, message_id)
    return {k: (session, message_id) for k, (_, session, message_id) in found.items()}


def _load(tx: Tx, message_ids: set[str], memo: _Verified) -> dict[str, Message]:
    """The verified turns for ``message_ids``; a turn that fails verification is left out."""
    out: dict[str, Message] = {}
    missing = []
    for message_id in sorted(message_ids):
        known = memo.get(message_id)
        if known is not None:
            out[message_id] = known
        else:
            missing.append(message_id)
    for start in range(0, len(missing), _CHUNK):
        chunk = missing[start:start + _CHUNK]
        rows = tx.all(f"SELECT digest, skeleton, skeleton_digest FROM messages "
                      f"WHERE digest IN ({', '.join('?' * len(chunk))})", chunk)
        parsed = []
        for message_id, skeleton, skeleton_digest in rows:
            try:
                parsed.append(codec.parse_skeleton(
                    "(gateway)", (0, message_id, 0.0, skeleton, skeleton_digest)))
            except StoreError:
                continue
        digests = sorted({r.digest for p in parsed for r in p.refs})
        payloads = dict(history._fetch_payloads(tx, digests))
        for skeleton in parsed:
            message, problems = codec.assemble("(gateway)", skeleton, payloads)
            if not problems:
                out[skeleton.id] = message
                memo.put(skeleton.id, message)
    return out
