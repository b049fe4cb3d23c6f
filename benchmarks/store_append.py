"""Scenario 4 — store: append throughput with durability on, and bytes on disk per turn.

Ours appends one turn per ``Store.append`` call (assistant + tool result + user, atomically) to a
fresh SQLite ``state.db`` with the store's defaults (WAL, ``synchronous=FULL``: every append is
fsynced). The floor is the least any durable store can do for the same turns: plain ``sqlite3``
with the same journal and sync settings, one transaction per turn inserting each message's
canonical JSON into a one-column table. Size is the database after close (the WAL checkpointed
into it) per turn, beside the raw payload: the canonical JSON bytes of the turn's messages.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks import synth
from benchmarks.measure import Row, ratio
from thoughtline import messages as canonical
from thoughtline.messages import Message
from thoughtline.store import open_store

SCENARIO = "store"
TURNS = 1_000
QUICK_TURNS = 100


def turns_of(history: Sequence[Message]) -> list[Sequence[Message]]:
    body = history[2:]
    return [body[i:i + 3] for i in range(0, len(body), 3)]


def append_ours(path: Path, turns: Sequence[Sequence[Message]]) -> float:
    """Seconds to append every turn through the store (session created beforehand)."""
    store = open_store(path, path.parent)
    try:
        sid = store.create_session(title="bench").id
        start = time.perf_counter()
        for turn in turns:
            store.append(sid, turn)
        return time.perf_counter() - start
    finally:
        store.close()


def append_floor(path: Path, turns: Sequence[Sequence[Message]]) -> float:
    """Seconds for bare sqlite3 (WAL, synchronous=FULL) to commit the same turns' JSON."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
        start = time.perf_counter()
        for turn in turns:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT INTO m (data) VALUES (?)",
                             [(canonical.dumps(m),) for m in turn])
            conn.execute("COMMIT")
        return time.perf_counter() - start
    finally:
        conn.close()


def db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())


def run(*, quick: bool) -> list[Row]:
    n = QUICK_TURNS if quick else TURNS
    turns = turns_of(synth.history(n))
    raw = sum(len(canonical.dumps(m)) for turn in turns for m in turn)
    with tempfile.TemporaryDirectory(prefix="tl-bench-store-") as tmp:
        ours_path, floor_path = Path(tmp, "ours", "state.db"), Path(tmp, "floor.db")
        ours_path.parent.mkdir()
        ours_s = append_ours(ours_path, turns)
        floor_s = append_floor(floor_path, turns)
        ours_size, floor_size = db_bytes(ours_path), db_bytes(floor_path)
    rate, floor_rate = n / ours_s, n / floor_s
    size = f"{n:,} turns"
    return [
        Row(scenario=SCENARIO, case="append, synchronous=FULL (higher is better)", size=size,
            ours=rate, floor=floor_rate, floor_kind="bare sqlite3 insert + fsync per turn",
            unit="turns/s", ratio=ratio(floor_rate, rate), reps=1,
            note="ratio = how many times slower than the floor",
            extra={"ours_ms_per_turn": ours_s / n * 1e3, "floor_ms_per_turn": floor_s / n * 1e3}),
        Row(scenario=SCENARIO, case="database size per turn vs raw payload", size=size,
            ours=ours_size / n, floor=raw / n, floor_kind="canonical JSON bytes per turn",
            unit="B/turn", ratio=ratio(ours_size, raw), reps=1,
            extra={"db_bytes": ours_size, "raw_bytes": raw, "floor_db_bytes": floor_size,
                   "floor_db_bytes_per_turn": floor_size / n}),
    ]
