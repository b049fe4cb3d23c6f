"""PostgreSQL-only guarantees: the pool, and what a dropped connection or an absent server does.

Connections are dropped for real (``pg_terminate_backend`` on the store's own connections, found
by their ``application_name``), at chosen points of a transaction: before it starts, in the middle,
while committing. The shared test server itself is never restarted (other test runs use it);
terminating every connection a store holds is what a restart looks like from that store.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_proxy import PgProxy
from store_backends import pg_url
from store_samples import signed_turn

from thoughtline.errors import StoreError, StoreUnavailable
from thoughtline.messages import dumps, user
from thoughtline.store import SqlStore, history, open_store
from thoughtline.store.base import Store
from thoughtline.store.pool import ATTEMPTS, PoolSettings
from thoughtline.store.postgres import NOT_RETRIED, PostgresStore, retried_calls


@pytest.fixture
def pg(pg_schema: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_url(pg_schema), settings=PoolSettings(max_size=3))
    yield store
    store.close()


def _drop_connections(admin: psycopg.Connection[Any], app: str) -> int:
    """Terminate every connection named ``app`` and wait until each is gone."""
    rows = admin.execute("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                         "WHERE application_name = %s", (app,)).fetchall()
    assert all(ok for (ok,) in rows)
    return len(rows)


def test_every_transactional_call_is_retried_and_nothing_else() -> None:
    protocol = {n for n in vars(Store) if not n.startswith("_")}
    retried = set(retried_calls())
    assert protocol - NOT_RETRIED <= retried
    assert {"append", "update_model_config", "record_verdict", "load_history"} <= retried
    for name in retried:
        assert getattr(PostgresStore, name) is not getattr(SqlStore, name), name
    for name in NOT_RETRIED:
        assert getattr(PostgresStore, name) is getattr(SqlStore, name), name


def test_calls_run_concurrently_on_pooled_connections(pg: PostgresStore,
                                                      pg_admin: psycopg.Connection[Any],
                                                      pg_schema: str) -> None:
    # Two transactions open at once on one store: the old single connection could not.
    with pg._db.transaction(write=False) as a, pg._db.transaction(write=False) as b:
        pid_a = a.one("SELECT pg_backend_pid()")
        pid_b = b.one("SELECT pg_backend_pid()")
    assert pid_a != pid_b
    (count,) = pg_admin.execute("SELECT COUNT(*) FROM pg_stat_activity WHERE application_name "
                                "= %s", (pg_schema,)).fetchone() or (0,)
    assert 2 <= count <= 3


def test_a_restart_between_calls_costs_no_failed_call(pg: PostgresStore,
                                                      pg_admin: psycopg.Connection[Any],
                                                      pg_schema: str) -> None:
    sid = pg.create_session().id
    pg.append(sid, [user("before")])
    assert _drop_connections(pg_admin, pg_schema) >= 1

    pg.append(sid, [user("after")])  # the pool's checkout check replaces the dead connection

    assert [m.message.text for m in pg.load_history(sid).messages] == ["before", "after"]


def test_a_connection_dropped_mid_append_is_retried_once_cleanly(
        pg: PostgresStore, pg_admin: psycopg.Connection[Any], pg_schema: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    sid = pg.create_session().id
    pg.append(sid, [user("q")])
    real = history._write_content
    calls: list[int] = []

    def dropping(tx: Any, encoded: Any) -> None:
        calls.append(1)
        if len(calls) == 1:  # the session row is locked and updated: now the connection dies
            _drop_connections(pg_admin, pg_schema)
        real(tx, encoded)

    monkeypatch.setattr(history, "_write_content", dropping)
    stored = pg.append(sid, [signed_turn(), user("next")])

    assert len(calls) == 2
    assert [s.seq for s in stored] == [1, 2]
    loaded = pg.load_history(sid)
    assert loaded.problems == ()
    assert [dumps(m.message) for m in loaded.messages] == [
        dumps(user("q")), dumps(signed_turn()), dumps(user("next"))]


def test_a_merge_interrupted_mid_transaction_reads_again(
        pg: PostgresStore, pg_admin: psycopg.Connection[Any], pg_schema: str) -> None:
    sid = pg.create_session(model_config={"fingerprints": ["fp:a"]}).id
    seen: list[list[str]] = []

    def add_b(current: Any) -> dict[str, Any]:
        seen.append(list(current["fingerprints"]))
        if len(seen) == 1:
            _drop_connections(pg_admin, pg_schema)
        return {**current, "fingerprints": [*current["fingerprints"], "fp:b"]}

    merged = pg.update_model_config(sid, add_b)

    assert seen == [["fp:a"], ["fp:a"]]  # the retry read the stored config again
    assert merged.model_config["fingerprints"] == ["fp:a", "fp:b"]
    assert pg.get_session(sid).model_config["fingerprints"] == ["fp:a", "fp:b"]


def test_a_connection_that_keeps_dropping_gives_up_with_store_unavailable(
        pg: PostgresStore, pg_admin: psycopg.Connection[Any], pg_schema: str) -> None:
    sid = pg.create_session(model_config={"n": 0}).id
    attempts: list[int] = []

    def always_dropping(current: Any) -> dict[str, Any]:
        attempts.append(1)
        _drop_connections(pg_admin, pg_schema)
        return {"n": current["n"] + 1}

    with pytest.raises(StoreUnavailable, match="nothing was committed") as caught:
        pg.update_model_config(sid, always_dropping)

    assert caught.value.retry_safe and len(attempts) == ATTEMPTS
    assert pg.get_session(sid).model_config == {"n": 0}


def test_a_connection_lost_while_committing_is_not_retried(
        pg: PostgresStore, pg_admin: psycopg.Connection[Any], pg_schema: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    sid = pg.create_session().id
    real = psycopg.Connection.commit
    commits: list[int] = []

    def dropping_commit(self: psycopg.Connection[Any]) -> None:
        commits.append(1)
        _drop_connections(pg_admin, pg_schema)
        real(self)

    monkeypatch.setattr(psycopg.Connection, "commit", dropping_commit)
    with pytest.raises(StoreUnavailable, match="unknown") as caught:
        pg.append(sid, [user("a"), user("b")])
    monkeypatch.undo()

    assert not caught.value.retry_safe and commits == [1]  # a retry could store it twice
    assert pg.load_history(sid).messages == ()  # all or nothing: here nothing


def test_a_read_only_transaction_cut_at_commit_is_retried(
        pg: PostgresStore, pg_admin: psycopg.Connection[Any], pg_schema: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    sid = pg.create_session(title="read me").id
    real = psycopg.Connection.commit
    commits: list[bool] = []

    def dropping_commit(self: psycopg.Connection[Any]) -> None:
        commits.append(bool(self.read_only))
        if len(commits) == 1:
            _drop_connections(pg_admin, pg_schema)
        real(self)

    monkeypatch.setattr(psycopg.Connection, "commit", dropping_commit)
    found = pg.get_session(sid)  # nothing was written: run again, not a 503
    monkeypatch.undo()

    assert found.title == "read me"
    assert commits == [True, True]


def test_a_restarted_server_is_used_at_once_though_the_pool_is_backing_off(
        pg_schema: str) -> None:
    """The pool replaces connections lost to a restart on an exponential backoff (1, 2, 4,
    8 s …): once the server is back it had nothing to hand out until its next attempt, and
    answered "no free connection (all N in use)" with none in use."""
    with PgProxy(pg_url(pg_schema)) as proxy:
        store = PostgresStore(proxy.url(), settings=PoolSettings(max_size=2, timeout=2,
                                                                 connect_timeout=1))
        try:
            sid = store.create_session().id
            with store._db.transaction(write=False), store._db.transaction(write=False):
                pass  # both connections open: each is lost below and replaced on a backoff
            proxy.down()  # the connections are killed, the server is away ...
            with pytest.raises(StoreUnavailable, match="cannot reach"):
                store.append(sid, [user("while down")])
            with pytest.raises(StoreUnavailable, match="cannot reach"):
                store.append(sid, [user("still down")])
            proxy.up()  # ... and back: the replacements' next attempts are seconds away
            store.append(sid, [user("after")])
            texts = [m.message.text for m in store.load_history(sid).messages]
        finally:
            store.close()
    assert texts == ["after"]


def test_an_unreachable_server_is_a_clear_store_unavailable(tmp_path: Path) -> None:
    url = "postgresql://postgres@127.0.0.1:1/test"  # nothing listens on port 1
    with pytest.raises(StoreUnavailable, match=r"cannot reach the store at .*127\.0\.0\.1:1"):
        PostgresStore(url, settings=PoolSettings(timeout=0.5, connect_timeout=1))


@pytest.mark.parametrize("url", ["postgresql://postgres:s3cret-pw@127.0.0.1:1/test",
                                 "postgresql://postgres@127.0.0.1:1/test?password=s3cret-pw"])
def test_the_url_password_never_appears_in_errors(url: str) -> None:
    with pytest.raises(StoreError) as caught:
        PostgresStore(url, settings=PoolSettings(timeout=0.5, connect_timeout=1))
    assert "s3cret-pw" not in str(caught.value)
    assert "***" in str(caught.value)


def test_open_store_gives_a_pooled_store(pg_schema: str, tmp_path: Path) -> None:
    with open_store(pg_url(pg_schema), tmp_path) as store:  # type: ignore[attr-defined]
        assert isinstance(store, PostgresStore)
        assert store.settings == PoolSettings()


def test_multi_row_inserts_split_into_chunks_round_trip(pg: PostgresStore,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from store_samples import rich_history

    from thoughtline.store import postgres

    monkeypatch.setattr(postgres, "_ROWS_PER_INSERT", 2)  # every insert spans several statements
    sid = pg.create_session().id
    stored = pg.append(sid, rich_history())
    assert [s.seq for s in stored] == list(range(len(rich_history())))
    loaded = pg.load_history(sid)
    assert loaded.problems == ()
    assert [dumps(m.message) for m in loaded.messages] == [dumps(m) for m in rich_history()]


def test_a_server_that_goes_away_and_comes_back(pg_schema: str) -> None:
    """Down: a clear StoreUnavailable, nothing half-written. Back: the same store carries on."""
    with PgProxy(pg_url(pg_schema)) as proxy:
        store = PostgresStore(proxy.url(), settings=PoolSettings(timeout=2, connect_timeout=1))
        try:
            sid = store.create_session().id
            store.append(sid, [user("before")])
            proxy.down()
            with pytest.raises(StoreUnavailable, match=r"cannot reach the store at .*127\.0\.0\.1"
                               ) as caught:
                store.append(sid, [user("while down"), user("also while down")])
            assert not caught.value.retry_safe  # the wait for a connection already ran out
            proxy.up()
            store.append(sid, [user("after")])
            texts = [m.message.text for m in store.load_history(sid).messages]
        finally:
            store.close()
    assert texts == ["before", "after"]
