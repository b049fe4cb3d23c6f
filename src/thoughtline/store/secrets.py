"""Secrets the store keeps for whoever shares it: named random keys, made once, never changed.

Owns the ``secrets`` table (migration ``create_secrets``). ``secret(name)`` returns the key under
``name``, making it on first use. Get-or-create is race-safe: every process proposes its own
random key with ``INSERT … ON CONFLICT DO NOTHING`` and then reads the row, so two gateways that
open one PostgreSQL database at once agree on the key the first insert wrote. A key never leaves
the store except to the caller; it is not exported and never logged.
"""

from __future__ import annotations

import secrets as _random
import time

from thoughtline.errors import StoreError
from thoughtline.store.db import Database

KEY_BYTES = 32


class SecretStore:
    """Store methods of the secrets table (needs ``self._db`` from ``SqlStore``)."""

    _db: Database

    def secret(self, name: str) -> bytes:
        """The key named ``name`` (32 random bytes, made on first use; the same ever after)."""
        with self._db.transaction(write=True) as tx:
            tx.execute("INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?) "
                       "ON CONFLICT (name) DO NOTHING",
                       (name, _random.token_bytes(KEY_BYTES), time.time()))
            row = tx.one("SELECT value FROM secrets WHERE name = ?", (name,))
        if row is None or len(bytes(row[0])) != KEY_BYTES:
            raise StoreError(f"the store's secret {name!r} is missing or damaged")
        return bytes(row[0])
