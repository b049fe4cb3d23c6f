"""Fixtures of the multi-gateway tests: a fresh PostgreSQL schema per test, the gateway helpers.

The helpers live beside their own suites (``tests/store/store_backends.py`` for the test server's
URL, ``tests/gateway/gateway_support.py`` for running ``thoughtline serve``); both directories go
on ``sys.path`` here so this suite also runs alone. An unreachable server fails, never skips.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]
for helper_dir in (TESTS / "store", TESTS / "gateway"):
    if str(helper_dir) not in sys.path:
        sys.path.insert(0, str(helper_dir))

import psycopg  # noqa: E402
from gateway_support import UPSTREAM_KEY, UPSTREAM_KEY_ENV  # noqa: E402
from store_backends import PG_URL, pg_url  # noqa: E402


@pytest.fixture(autouse=True)
def upstream_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
    return UPSTREAM_KEY


@pytest.fixture
def pg_store_url() -> Iterator[str]:
    """A ``postgresql://`` URL naming a fresh, empty schema (dropped afterwards)."""
    try:
        admin: psycopg.Connection[Any] = psycopg.connect(PG_URL, autocommit=True,
                                                         connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL is not reachable at {PG_URL} ({exc}). Start the server (CI "
                    "does) or set THOUGHTLINE_TEST_DATABASE_URL.", pytrace=False)
    schema = f"tl_test_{uuid.uuid4().hex[:12]}"
    admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield pg_url(schema)
    finally:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()
