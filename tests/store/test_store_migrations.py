"""Schema migrations bookkeeping, idempotent reopen, refusal of newer schemas, backend choice."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_backends import Backend

from thoughtline.errors import StoreError
from thoughtline.messages import user
from thoughtline.store import SQLiteStore, open_store
from thoughtline.store.migrations import MIGRATIONS


def test_bookkeeping_records_every_migration(backend: Backend) -> None:
    rows = backend.sql("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
    assert [(v, n) for v, n, _ in rows] == [(i, fn.__name__) for i, fn in
                                            enumerate(MIGRATIONS, start=1)]
    assert all(applied > 0 for _, _, applied in rows)
    assert len({fn.__name__ for fn in MIGRATIONS}) == len(MIGRATIONS)


def test_reopening_is_idempotent_and_keeps_data(backend: Backend) -> None:
    sid = backend.store.create_session(title="kept").id
    backend.store.append(sid, [user("hello")])
    before = backend.sql("SELECT version, name, applied_at FROM schema_migrations")
    backend.reopen()
    backend.reopen()
    assert backend.sql("SELECT version, name, applied_at FROM schema_migrations") == before
    store = backend.store
    assert store.get_session("kept").turns == 1


def test_a_newer_schema_is_refused_with_upgrade_advice(backend: Backend) -> None:
    future = len(MIGRATIONS) + 1
    backend.sql("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                [future, "from_the_future", 1.0])
    with pytest.raises(StoreError, match=r"(?i)upgrade thoughtline") as caught:
        backend.reopen()
    assert str(future) in str(caught.value)


def test_a_half_migrated_database_is_completed(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SQLiteStore(path).close()
    import sqlite3

    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("DROP TABLE verdicts")
    version = [m.__name__ for m in MIGRATIONS].index("create_verdicts") + 1
    raw.execute("DELETE FROM schema_migrations WHERE version = ?", (version,))
    raw.close()
    with SQLiteStore(path) as store:
        assert store.verdicts() == []


def test_open_store_chooses_the_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THOUGHTLINE_DATABASE_URL", raising=False)
    home = tmp_path / "home"
    default = open_store(None, home)
    assert isinstance(default, SQLiteStore) and default.path == home / "state.db"
    default.close()
    other = tmp_path / "elsewhere"
    other.mkdir()
    in_dir = open_store(other, home)
    assert isinstance(in_dir, SQLiteStore) and in_dir.path == other / "state.db"
    in_dir.close()
    by_str = open_store(str(tmp_path / "x.db"), home)
    assert isinstance(by_str, SQLiteStore) and by_str.path == tmp_path / "x.db"
    by_str.close()
    with pytest.raises(StoreError, match="unsupported"):
        open_store("mysql://db/x", home)


def test_open_store_honours_the_environment(backend: Backend, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THOUGHTLINE_DATABASE_URL", backend.target)
    sid = backend.store.create_session(title="via env").id
    with open_store(None, tmp_path / "unused") as store:  # type: ignore[attr-defined]
        assert store.get_session("via env").id == sid
    assert not (tmp_path / "unused" / "state.db").exists()
    explicit = tmp_path / "explicit.db"
    with open_store(explicit, tmp_path) as store:  # type: ignore[attr-defined]
        assert store.list_sessions() == []


def test_public_api_is_importable() -> None:
    import thoughtline.store as package

    # Order is ruff's RUF022 (isort-style: constants, classes, functions).
    assert len(set(package.__all__)) == len(package.__all__)
    for name in package.__all__:
        assert hasattr(package, name), name
