"""The driver seam (``db.Tx``) means the same on every backend, whatever each does underneath
(PostgreSQL sends ``executemany`` inserts as multi-row statements)."""

from __future__ import annotations

import pytest
from store_backends import Backend

from thoughtline.errors import StoreError

_UPSERT = ("INSERT INTO verdicts (provider, host, model, drop_carriers, pad, reason, learned_at) "
           "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider, host, model) DO UPDATE SET "
           "reason = excluded.reason, learned_at = excluded.learned_at")


def _rows(backend: Backend) -> list[tuple[object, ...]]:
    return backend.sql("SELECT provider, reason, learned_at FROM verdicts ORDER BY provider")


def test_executemany_upserts_a_repeated_key_like_row_by_row(backend: Backend) -> None:
    rows = [("a", "h", "m", "[]", 0, f"r{i}", float(i)) for i in range(3)]
    rows.insert(1, ("b", "h", "m", "[]", 0, "only", 9.0))
    with backend.store._db.transaction(write=True) as tx:
        tx.executemany(_UPSERT, rows)
    assert _rows(backend) == [("a", "r2", 2.0), ("b", "only", 9.0)]


def test_executemany_do_nothing_keeps_the_first(backend: Backend) -> None:
    sql = _UPSERT.split(" ON CONFLICT")[0] + " ON CONFLICT DO NOTHING"
    with backend.store._db.transaction(write=True) as tx:
        tx.executemany(sql, [("a", "h", "m", "[]", 0, f"r{i}", float(i)) for i in range(3)])
    assert _rows(backend) == [("a", "r0", 0.0)]


def test_a_repeated_key_in_plain_inserts_fails_and_writes_nothing(backend: Backend) -> None:
    sql = _UPSERT.split(" ON CONFLICT")[0]
    with pytest.raises(StoreError), backend.store._db.transaction(write=True) as tx:
        tx.executemany(sql, [("a", "h", "m", "[]", 0, "x", 1.0)] * 2)
    assert _rows(backend) == []
