"""The object the store tests get: a store plus raw SQL access to its tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thoughtline.store import SqlStore, open_store


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
