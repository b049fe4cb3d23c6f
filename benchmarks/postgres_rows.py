"""Scenario — store on PostgreSQL, next to SQLite: append throughput, one and two processes,
resume (``load_history``) time, and the gateway's requests per second on each.

Same turns as the ``store`` scenario (assistant + tool result + user per ``Store.append``, one
transaction each, durable). One process: the pooled PostgreSQL store beside the floor, bare
psycopg committing each turn's canonical JSON into a one-column table (one transaction per turn,
the least a durable PostgreSQL writer does), and beside the SQLite store on the same turns. Two
processes: two OS processes append to their own sessions in one database at once (two gateways
on one server); the number is turns committed per second by both together, for each backend.
Resume: loading the 1,000-turn (quick: 100) session back, verified, on each backend. Gateway:
requests per second of ``thoughtline serve`` (the ``gateway`` scenario's request: a 40-message
stripped tool-loop history, 20 turns rehydrated and one answer stored per request, four clients)
on SQLite and on PostgreSQL, with one process and with two processes sharing the store (clients
split between them, as behind a load balancer).

The server is ``THOUGHTLINE_BENCH_DATABASE_URL``, else ``THOUGHTLINE_TEST_DATABASE_URL``, else the
local default; each measurement works in a fresh schema of its own, dropped at the end. Without a
server it prints a "not measured" row naming the URL.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg

from benchmarks import gateway_procs, gateway_rows, synth
from benchmarks.measure import Row, not_built, ratio
from thoughtline import messages as canonical
from thoughtline.messages import Message
from thoughtline.store import open_store

SCENARIO = "store-postgres"
TURNS = 1_000
QUICK_TURNS = 100
RESUME_REPS, QUICK_RESUME_REPS = 5, 2
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def server_url() -> str:
    return (os.environ.get("THOUGHTLINE_BENCH_DATABASE_URL")
            or os.environ.get("THOUGHTLINE_TEST_DATABASE_URL") or DEFAULT_URL)


def in_schema(url: str, schema: str) -> str:
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"


def turns_of(history: Sequence[Message]) -> list[Sequence[Message]]:
    body = history[2:]
    return [body[i:i + 3] for i in range(0, len(body), 3)]


def append_ours(target: str, turns: Sequence[Sequence[Message]]) -> tuple[float, str]:
    """Seconds to append every turn through the store, and the session's id."""
    store = open_store(target, Path(tempfile.gettempdir()))
    try:
        sid = store.create_session(title="bench").id
        start = time.perf_counter()
        for turn in turns:
            store.append(sid, turn)
        return time.perf_counter() - start, sid
    finally:
        store.close()


def append_floor(url: str, turns: Sequence[Sequence[Message]]) -> float:
    """Seconds for bare psycopg to commit the same turns' JSON, one transaction per turn."""
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE floor_m (id BIGSERIAL PRIMARY KEY, data BYTEA NOT NULL)")
        conn.commit()
        start = time.perf_counter()
        for turn in turns:
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO floor_m (data) VALUES (%s)",
                                [(canonical.dumps(m),) for m in turn])
            conn.commit()
        return time.perf_counter() - start


def _child(target: str, turns: Sequence[Sequence[Message]], ready: Any, go: Any) -> None:
    store = open_store(target, Path(tempfile.gettempdir()))
    try:
        sid = store.create_session(title="bench").id
        ready.set()  # connected and migrated: only the appends are timed
        go.wait()
        for turn in turns:
            store.append(sid, turn)
    finally:
        store.close()


def two_processes(target: str, turns: Sequence[Sequence[Message]]) -> float:
    """Wall seconds for two processes to append ``turns`` each, started together."""
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    readies = [ctx.Event() for _ in range(2)]
    procs = [ctx.Process(target=_child, args=(target, turns, r, go)) for r in readies]
    for proc in procs:
        proc.start()
    for ready in readies:
        ready.wait(60)
    start = time.perf_counter()
    go.set()
    for proc in procs:
        proc.join(300)
        if proc.exitcode != 0:
            raise RuntimeError(f"append child exited {proc.exitcode}")
    return time.perf_counter() - start


def resume_seconds(target: str, sid: str, reps: int) -> float:
    store = open_store(target, Path(tempfile.gettempdir()))
    try:
        store.load_history(sid)  # warm-up
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            loaded = store.load_history(sid)
            times.append(time.perf_counter() - start)
            assert not loaded.problems
        return statistics.median(times)
    finally:
        store.close()


@contextmanager
def _serve(upstream: str, home: Path, store: str) -> Iterator[str]:
    """A ``thoughtline serve`` process on ``store``; yields its base URL."""
    with gateway_procs.gateway(upstream, home, store=store) as served:
        yield served.url


def gateway_rps(upstream: str, tmp: Path, store: str, processes: int, seconds: float) -> float:
    """Requests per second through ``processes`` gateways on one store, four clients in all."""
    headers = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
    with ExitStack() as stack:
        urls = [stack.enter_context(_serve(upstream, tmp / f"gw{n}", store))
                for n in range(processes)]
        with httpx.Client(headers=headers, timeout=60) as client:
            stripped, _ = gateway_rows.build_history(client, urls[0])
        body = gateway_rows._body(stripped, stream=False, model="ds/deepseek-v4-pro")
        counts: list[float] = [0.0] * processes

        def one(n: int) -> None:
            counts[n] = gateway_rows.throughput(urls[n] + "/chat/completions", body,
                                                seconds=seconds, clients=4 // processes,
                                                headers=headers)

        threads = [threading.Thread(target=one, args=(n,)) for n in range(processes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sum(counts)


def gateway_rows_for(fresh_pg: Callable[[], str], tmp: Path, *, seconds: float) -> list[Row]:
    """The gateway's requests/s on each backend, one and two processes, each on a fresh store."""
    rates: dict[tuple[str, int], float] = {}
    with gateway_rows._emulator() as upstream:
        for n in (1, 2):
            lite = str(tmp / f"sqlite{n}" / "shared.db")
            rates[("sqlite", n)] = gateway_rps(upstream, tmp / f"sqlite{n}", lite, n, seconds)
            rates[("postgres", n)] = gateway_rps(upstream, tmp / f"pg{n}", fresh_pg(), n,
                                                 seconds)
    return [Row(scenario=SCENARIO, case=f"gateway requests/s, {n} process{'es' if n > 1 else ''}:"
                " PostgreSQL beside SQLite", size="40-turn history, 4 clients",
                ours=rates[("postgres", n)], floor=rates[("sqlite", n)], unit="req/s",
                floor_kind="the same gateways on one SQLite file",
                ratio=ratio(rates[("sqlite", n)], rates[("postgres", n)]), reps=1,
                note="whole answers; each request rehydrates 20 turns and stores one; SQLite as "
                     "serve opens it (no fsync per commit), PostgreSQL with the server's "
                     "settings (here: fsync per commit); ratio = SQLite ÷ PostgreSQL")
            for n in (1, 2)]


def run(*, quick: bool) -> list[Row]:
    url = server_url()
    try:
        admin = psycopg.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        return [not_built(SCENARIO, "append and resume on PostgreSQL",
                          f"PostgreSQL not reachable at {url}: {str(exc).strip()[:120]}")]
    schemas: list[str] = []

    def fresh() -> str:
        schemas.append(f"tl_bench_{uuid.uuid4().hex[:10]}")
        admin.execute(f"CREATE SCHEMA {schemas[-1]}")
        return in_schema(url, schemas[-1])

    try:
        with tempfile.TemporaryDirectory(prefix="tl-bench-pg-") as tmp:
            n = QUICK_TURNS if quick else TURNS
            reps = QUICK_RESUME_REPS if quick else RESUME_REPS
            rows = measure(fresh(), Path(tmp) / "state.db", n=n, reps=reps)
            if quick:  # six gateway processes would take most of --quick's 30 s
                return [*rows, not_built(SCENARIO, "gateway requests/s: PostgreSQL beside "
                                         "SQLite", "skipped in --quick")]
            return rows + gateway_rows_for(fresh, Path(tmp), seconds=5.0)
    finally:
        for schema in schemas:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()


def measure(pg: str, sqlite: Path, *, n: int, reps: int) -> list[Row]:
    """Every row, on ``n`` turns, in the (empty) PostgreSQL schema ``pg`` and a new SQLite file."""
    turns = turns_of(synth.history(n))
    pg_s, pg_sid = append_ours(pg, turns)
    floor_s = append_floor(pg, turns)
    lite_s, lite_sid = append_ours(str(sqlite), turns)
    pg_two = two_processes(pg, turns)
    lite_two = two_processes(str(sqlite), turns)
    pg_resume = resume_seconds(pg, pg_sid, reps)
    lite_resume = resume_seconds(str(sqlite), lite_sid, reps)
    size = f"{n:,} turns"
    rate = n / pg_s
    return [
        Row(scenario=SCENARIO, case="append on PostgreSQL, one process (higher is better)",
            size=size, ours=rate, floor=n / floor_s, unit="turns/s",
            floor_kind="bare psycopg insert + commit per turn", ratio=ratio(n / floor_s, rate),
            reps=1, note="ratio = how many times slower than the floor",
            extra={"ours_ms_per_turn": pg_s / n * 1e3, "floor_ms_per_turn": floor_s / n * 1e3}),
        Row(scenario=SCENARIO, case="append, one process: PostgreSQL beside SQLite", size=size,
            ours=rate, floor=n / lite_s, unit="turns/s",
            floor_kind="thoughtline SQLite store (WAL, synchronous=FULL)",
            ratio=ratio(n / lite_s, rate), reps=1,
            note="ratio = SQLite turns/s ÷ PostgreSQL turns/s",
            extra={"sqlite_ms_per_turn": lite_s / n * 1e3}),
        Row(scenario=SCENARIO, case="append, two processes at once: PostgreSQL beside SQLite",
            size=f"2 × {n:,} turns", ours=2 * n / pg_two, floor=2 * n / lite_two,
            unit="turns/s", floor_kind="the same two processes on one SQLite file",
            ratio=ratio(2 * n / lite_two, 2 * n / pg_two), reps=1,
            note="both processes together; ratio = SQLite ÷ PostgreSQL",
            extra={"pg_wall_s": pg_two, "sqlite_wall_s": lite_two}),
        Row(scenario=SCENARIO, case="resume (load_history, verified): PostgreSQL beside SQLite",
            size=size, ours=pg_resume, floor=lite_resume, unit="s",
            floor_kind="thoughtline SQLite store", ratio=ratio(pg_resume, lite_resume),
            reps=reps, note="ratio = PostgreSQL ÷ SQLite"),
    ]
