"""The store's named secrets (``store.secrets``): made once, the same for every opener.

Two stores on one database asking at once get one key (get-or-create is race-safe), a reopened
store gets the key it had, and different names get different keys; on SQLite and PostgreSQL.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from store_backends import Backend

from thoughtline.store import open_store
from thoughtline.store.engine import SqlStore


def test_secret_is_made_once_and_kept(store: SqlStore, backend: Backend) -> None:
    first = store.secret("gateway-mint-v1")
    assert len(first) == 32
    assert store.secret("gateway-mint-v1") == first
    assert store.secret("another") != first
    assert backend.reopen().secret("gateway-mint-v1") == first
    assert backend.count("secrets") == 2


def test_concurrent_openers_agree_on_one_key(store: SqlStore, backend: Backend) -> None:
    others = [open_store(backend.target, Path("/nonexistent-home")) for _ in range(3)]
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            keys = list(pool.map(lambda s: s.secret("race"), [store, *others] * 3))
    finally:
        for other in others:
            other.close()
    assert len(set(keys)) == 1
    assert backend.sql("SELECT value FROM secrets WHERE name = ?", ("race",))[0][0] == keys[0]
