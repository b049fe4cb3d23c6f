"""A gateway session exists once it has a turn (issue 46 item 2), on SQLite and PostgreSQL.

* A request whose upstream fails (a 500, a 400 it refuses, a stream cut short), one the gateway
  refuses itself, and one whose client leaves mid-stream store no session: neither
  ``Store.list_sessions`` nor ``thoughtline sessions list`` shows one.
* A request that is answered stores exactly one session holding its turns, under the id its
  response named; the next request continues it; a named session that does not exist is a 404.
* The migration ``drop_empty_gateway_sessions`` deletes the empty sessions earlier gateways left
  behind, and keeps gateway sessions with turns and every library or CLI session.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import tomllib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest
from click.testing import CliRunner
from gateway_support import MODEL, SESSION_HEADER, gateway_toml

from thoughtline.cli.main import cli
from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import parse
from thoughtline.messages import Message, Text, user
from thoughtline.requestlog import RequestLog
from thoughtline.store import SqlStore, open_store
from thoughtline.store.migrations import MIGRATIONS
from thoughtline.testing import ChatEmulator
from thoughtline.testing.loopback import LoopbackServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))
from store_backends import PG_URL, pg_url

QUESTION = [{"role": "user", "content": "Which sessions does a failed request leave?"}]


@dataclass
class Backend:
    """A store under test, its ``--store`` target, and raw SQL on its tables."""

    name: str
    target: str
    store: SqlStore
    raw: Any

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> None:
        self.raw.execute(query.replace("?", "%s") if self.name == "postgres" else query, params)

    def reopen(self) -> SqlStore:
        self.store.close()
        self.store = open_store(self.target, Path("/nonexistent-home"))  # type: ignore[assignment]
        return self.store


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        path = tmp_path / "state.db"
        store = open_store(path, tmp_path)
        made = Backend("sqlite", str(path), store,  # type: ignore[arg-type]
                       sqlite3.connect(path, isolation_level=None))
        yield made
        made.store.close()
        made.raw.close()
        return
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL is not reachable at {PG_URL} ({exc}). Start the server (CI "
                    "does) or set THOUGHTLINE_TEST_DATABASE_URL.", pytrace=False)
    schema = f"tl_test_{uuid.uuid4().hex[:12]}"
    admin.execute(f"CREATE SCHEMA {schema}")
    url = pg_url(schema)
    made = Backend("postgres", url, open_store(url, tmp_path),  # type: ignore[arg-type]
                   psycopg.connect(pg_url(schema, app=f"{schema}_raw"), autocommit=True))
    try:
        yield made
    finally:
        made.store.close()
        made.raw.close()
        admin.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()


@contextmanager
def serving(emu: ChatEmulator, backend: Backend, tmp_path: Path,
            tokens: str = "") -> Iterator[str]:
    """A gateway on ``backend``'s store in front of ``emu``; yields its base URL."""
    config = parse(tomllib.loads(gateway_toml(emu)))
    gateway = Gateway(config, backend.store, environ={"TL_GATEWAY_TEST_TOKENS": tokens},
                      request_log=RequestLog(tmp_path / "logs"))
    server = LoopbackServer(create_app(gateway), name="gateway").start()
    try:
        yield server.origin + "/v1"
    finally:
        server.stop()


def _post(base_url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(base_url + "/chat/completions", content=orjson.dumps(body), timeout=60,
                      headers={"content-type": "application/json", **headers})


def _listed(backend: Backend, home: Path) -> list[dict[str, Any]]:
    """``thoughtline sessions list`` on the backend's store, through the CLI's entry point."""
    result = CliRunner().invoke(cli, ["--home", str(home), "--store", backend.target,
                                      "sessions", "list", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _finished(tmp_path: Path, count: int) -> list[dict[str, Any]]:
    """The request log's records once ``count`` requests have ended (bounded wait)."""
    log = RequestLog(tmp_path / "logs")
    deadline = time.monotonic() + 30
    records: list[dict[str, Any]] = []
    while time.monotonic() < deadline and len(records) < count:
        records = list(log.read())
        time.sleep(0.05)
    return records


def _nothing_stored(backend: Backend, tmp_path: Path) -> None:
    assert backend.store.list_sessions() == []
    assert _listed(backend, tmp_path / "cli-home") == []


def test_an_upstream_error_stores_no_session(backend: Backend, deepseek: ChatEmulator,
                                             tmp_path: Path) -> None:
    for _ in range(8):  # more than the engine's retries of a 500
        deepseek.fail_next(500)
    with serving(deepseek, backend, tmp_path) as base_url:
        answer = _post(base_url, {"model": MODEL, "messages": QUESTION})
    assert answer.status_code >= 500, answer.text
    _nothing_stored(backend, tmp_path)


def test_a_refused_request_stores_no_session(backend: Backend, deepseek: ChatEmulator,
                                             tmp_path: Path) -> None:
    deepseek.fail_next(400, {"error": {"message": "bad request", "type": "invalid_request"}})
    with serving(deepseek, backend, tmp_path, tokens="secret-token") as base_url:
        auth = {"authorization": "Bearer secret-token"}
        by_upstream = _post(base_url, {"model": MODEL, "messages": QUESTION}, **auth)
        by_face = _post(base_url, {"model": MODEL, "messages": "not a list"}, **auth)
        unauthorized = _post(base_url, {"model": MODEL, "messages": QUESTION})
        unknown = _post(base_url, {"model": MODEL, "messages": QUESTION},
                        **{**auth, SESSION_HEADER: "0" * 32})
    assert [r.status_code for r in (by_upstream, by_face, unauthorized, unknown)] == \
        [400, 400, 401, 404], [by_upstream.text, by_face.text, unknown.text]
    assert unknown.json()["error"]["code"] == "session_not_found"
    _nothing_stored(backend, tmp_path)


def test_a_client_that_leaves_mid_stream_leaves_no_session(
        backend: Backend, deepseek: ChatEmulator, tmp_path: Path) -> None:
    deepseek.chunk_delay = 0.2  # about 20 chunks: several seconds of answer
    body = {"model": MODEL, "messages": [{"role": "user", "content": "a long story please"}],
            "stream": True}
    with serving(deepseek, backend, tmp_path) as base_url, httpx.Client(timeout=60) as client:
        with client.stream("POST", base_url + "/chat/completions", json=body) as response:
            assert response.status_code == 200
            assert response.headers[SESSION_HEADER]  # named before anything is stored
            next(response.iter_lines())
        records = _finished(tmp_path, 1)
        assert [r["outcome"] for r in records] == ["cancelled"]
        assert records[0]["session"] == response.headers[SESSION_HEADER]
    _nothing_stored(backend, tmp_path)


def test_an_upstream_stream_cut_short_stores_no_session(
        backend: Backend, deepseek: ChatEmulator, tmp_path: Path) -> None:
    deepseek.cut_stream_after(2)
    body = {"model": MODEL, "messages": QUESTION, "stream": True}
    with serving(deepseek, backend, tmp_path) as base_url:
        answer = _post(base_url, body)
        records = _finished(tmp_path, 1)
    assert answer.status_code == 200 and '"error"' in answer.text, answer.text
    assert [r["outcome"] for r in records] != ["ok"]
    _nothing_stored(backend, tmp_path)


def test_an_answered_request_stores_one_session_with_its_turns(
        backend: Backend, deepseek: ChatEmulator, tmp_path: Path) -> None:
    with serving(deepseek, backend, tmp_path) as base_url:
        first = _post(base_url, {"model": MODEL, "messages": QUESTION})
        assert first.status_code == 200, first.text
        sid = first.headers[SESSION_HEADER]
        reply = first.json()["choices"][0]["message"]["content"]
        later = [*QUESTION, {"role": "assistant", "content": reply},
                 {"role": "user", "content": "And then?"}]
        second = _post(base_url, {"model": MODEL, "messages": later, "stream": True},
                       **{SESSION_HEADER: sid})
        assert second.status_code == 200 and second.headers[SESSION_HEADER] == sid
        records = _finished(tmp_path, 2)
    assert [r["session"] for r in records] == [sid, sid]
    (session,) = backend.store.list_sessions()
    assert session.id == sid and session.turns == 4
    assert session.title.startswith("Which sessions does a failed request leave?")
    assert [(s["id"], s["turns"]) for s in _listed(backend, tmp_path / "cli-home")] == [(sid, 4)]


def test_the_migration_deletes_only_empty_gateway_sessions(backend: Backend) -> None:
    store = backend.store
    gateway_empty = [store.create_session(title=t, tenant=tenant).id for t, tenant in [
        ("gateway", ""), ("gateway", "acme"), ("Hello there (via ds)", ""),
        ("gateway (via ds)", ""), ("Hi (via ds, tenant acme)", "acme")]]
    answered = store.create_session(title="Hello (via ds)")
    store.append(answered.id, [user("Hello"), Message(role="assistant",
                                                      parts=(Text(text="Hi"),))])
    forked = store.create_session(title="forked (via ds)")  # no turns, but a branch's parent
    branch = store.branch(forked.id, at=0, title="my branch")
    cli_empty = store.create_session(title="my notes")  # Session.create: stored before a send
    untitled = store.create_session()
    not_its_tenant = store.create_session(title="Hi (via ds, tenant acme)", tenant="other")
    # As a store written before the migration: undo its bookkeeping, then reopen.
    version = [m.__name__ for m in MIGRATIONS].index("drop_empty_gateway_sessions") + 1
    backend.sql("DELETE FROM schema_migrations WHERE version = ?", (version,))
    kept = {s.id for s in backend.reopen().list_sessions()}
    assert not kept & set(gateway_empty)
    assert kept == {answered.id, forked.id, branch.id, cli_empty.id, untitled.id,
                    not_its_tenant.id}
    assert backend.store.get_session(answered.id).turns == 2
