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

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from thoughtline.errors import NotFound, StoreError
from thoughtline.messages import Message
from thoughtline.store import codec, history
from thoughtline.store.base import StoredMessage

if TYPE_CHECKING:
    from thoughtline.store.db import Database, Tx

#: Lookup-key kinds: a tool-call id of the turn, or the digest of its visible content.
CALL, CONTENT = "call", "content"

_NEWEST = (
    "SELECT r.session_id, r.message_id, m.skeleton, m.skeleton_digest FROM rehydration r "
    "LEFT JOIN messages m ON m.digest = r.message_id "
    "WHERE r.tenant = ? AND r.kind = ? AND r.lookup_key = ?")


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

    def append_indexed(self, session_id: str, messages: Sequence[Message], *, tenant: str,
                       keys: Sequence[IndexKey]) -> list[StoredMessage]:
        """Append ``messages`` and index the last one under ``keys``, atomically."""
        now = time.time()
        with self._db.transaction(write=True) as tx:
            if not tx.execute("UPDATE sessions SET updated_at = ? WHERE id = ?",
                              (now, session_id)):
                raise NotFound(f"no session {session_id!r}")
            stored = history.append(tx, session_id, messages, now)
            if stored and keys:
                _index(tx, tenant, session_id, stored[-1].id, keys, now)
            return stored

    def rehydrate(self, tenant: str, keys: Sequence[IndexKey | None], *,
                  session_id: str | None = None) -> list[Rehydrated | None]:
        """The newest stored turn for each key (None: no match, or it failed verification)."""
        with self._db.transaction(write=False) as tx:
            return [None if key is None else _lookup(tx, tenant, key, session_id)
                    for key in keys]


def _index(tx: Tx, tenant: str, session_id: str, message_id: str, keys: Sequence[IndexKey],
           now: float) -> None:
    tx.executemany(
        "INSERT INTO rehydration (tenant, kind, lookup_key, session_id, message_id, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, kind, lookup_key, session_id) "
        "DO UPDATE SET message_id = excluded.message_id, created_at = excluded.created_at",
        [(tenant, k.kind, k.key, session_id, message_id, now) for k in keys])


def _lookup(tx: Tx, tenant: str, key: IndexKey, session_id: str | None) -> Rehydrated | None:
    sql, params = _NEWEST, [tenant, key.kind, key.key]
    if session_id is not None:
        sql += " AND r.session_id = ?"
        params.append(session_id)
    row = tx.one(sql + " ORDER BY r.created_at DESC LIMIT 1", params)
    if row is None or row[2] is None:
        return None
    found_session, message_id, skeleton, skeleton_digest = row
    try:
        parsed = codec.parse_skeleton(found_session, (0, message_id, 0.0, skeleton,
                                                      skeleton_digest))
    except StoreError:
        return None
    payloads = dict(history._fetch_payloads(tx, sorted({r.digest for r in parsed.refs})))
    message, problems = codec.assemble(found_session, parsed, payloads)
    if problems:
        return None
    return Rehydrated(session_id=found_session, message_id=message_id, message=message)
