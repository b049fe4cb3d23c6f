"""The object the store tests get: a store plus raw SQL access to its tables."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thoughtline.store import SqlStore, open_store

PG_URL = os.environ.get("THOUGHTLINE_TEST_DATABASE_URL",
                        "postgresql://postgres@127.0.0.1:5432/test")


def pg_url(schema: str, *, app: str | None = None) -> str:
    """The test server's URL with ``schema`` as search path; ``app`` names the connections
    (``pg_stat_activity.application_name``), so a test can find and drop the store's own."""
    sep = "&" if "?" in PG_URL else "?"
    return f"{PG_URL}{sep}options=-csearch_path%3D{schema}&application_name={app or schema}"


@dataclass
class Backend:
    """A store under test plus raw SQL access to its tables (to corrupt or count rows)."""

    name: str
    target: str
    store: SqlStore
    _raw: Any = field(default=None, repr=False)

    def sql(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run SQL (``?`` placeholders) outside the store; returns rows, if any."""
        if self.name == "postgres":
            cur = self._raw.execute(query.replace("?", "%s"), params)
            return cur.fetchall() if cur.description else []
        cur = self._raw.execute(query, params)
        return cur.fetchall()

    def count(self, table: str) -> int:
        return self.sql(f"SELECT COUNT(*) FROM {table}")[0][0]

    def reopen(self) -> SqlStore:
        self.store.close()
        self.store = open_store(self.target, Path("/nonexistent-home"))  # type: ignore[assignment]
        return self.store
