"""One store test suite, run against every backend.

``backend`` is parametrized over SQLite (a file in tmp_path) and PostgreSQL (a fresh schema per
test in the server at ``THOUGHTLINE_TEST_DATABASE_URL``, default the local trust-auth server).
If PostgreSQL is unreachable its tests fail with a message saying so: CI starts the server.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from store_backends import PG_URL, Backend, pg_url

from thoughtline.store import SqlStore, open_store


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[psycopg.Connection[Any]]:
    try:
        conn = psycopg.connect(PG_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        reason = str(exc)
    else:
        yield conn
        conn.close()
        return
    pytest.fail(f"PostgreSQL is not reachable at {PG_URL} ({reason}). Start the server (CI does) "
                "or set THOUGHTLINE_TEST_DATABASE_URL.", pytrace=False)


@pytest.fixture
def pg_schema(pg_admin: psycopg.Connection[Any]) -> Iterator[str]:
    schema = f"tl_test_{uuid.uuid4().hex[:12]}"
    pg_admin.execute(f"CREATE SCHEMA {schema}")
    yield schema
    pg_admin.execute(f"DROP SCHEMA {schema} CASCADE")


def _sqlite_backend(tmp_path: Path) -> Backend:
    path = tmp_path / "home" / "state.db"
    store = open_store(path, tmp_path / "home")
    raw = sqlite3.connect(path, isolation_level=None)
    return Backend(name="sqlite", target=str(path), store=store, _raw=raw)  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        made = _sqlite_backend(tmp_path)
    else:
        schema = request.getfixturevalue("pg_schema")
        url = pg_url(schema)
        raw = psycopg.connect(pg_url(schema, app=f"{schema}_raw"), autocommit=True)
        made = Backend(name="postgres", target=url, store=open_store(url, tmp_path),  # type: ignore[arg-type]
                       _raw=raw)
    yield made
    made.store.close()
    made._raw.close()


@pytest.fixture
def store(backend: Backend) -> SqlStore:
    return backend.store
