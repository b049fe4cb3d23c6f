"""Several processes on one store (what several gateway processes do): nothing is ever lost.

Each worker is its own OS process with its own connections (``store_worker.py``); all start
together, then interleave appends to one conversation, merges of one verdict and merges into one
session's fingerprints. Every turn, verdict carrier and fingerprint must be there afterwards, and
every turn contiguous.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from store_backends import Backend, pg_url

from thoughtline.store import open_store
from thoughtline.store.migrations import MIGRATIONS

WORKER = Path(__file__).with_name("store_worker.py")
TAGS = ("a", "b", "c")


def _run_together(target: str, sid: str, count: int, tags: tuple[str, ...] = TAGS) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, str(WORKER), target, sid, tag, str(count)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for tag in tags]
    for proc in procs:  # every worker is up before any starts writing
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        out, _ = proc.communicate(timeout=90)
        assert proc.returncode == 0 and out.strip() == "done"


def test_processes_never_lose_a_turn_a_verdict_or_a_fingerprint(backend: Backend) -> None:
    count = 12
    sid = backend.store.create_session(model_config={"fingerprints": ["seed"]}).id

    _run_together(backend.target, sid, count)

    loaded = backend.store.load_history(sid)
    assert loaded.problems == ()
    assert [m.seq for m in loaded.messages] == list(range(len(TAGS) * count * 3))
    messages = [m.message for m in loaded.messages]
    for i in range(0, len(messages), 3):  # each append is contiguous and whole
        marker = messages[i].text.removesuffix(":q")
        assert messages[i + 2].text == f"{marker}:end"
        assert messages[i + 1].reasoning[0].signature == marker * 500
    expected = {f"{tag}{i}" for tag in TAGS for i in range(count)}
    assert {m.text.removesuffix(":q") for m in messages[::3]} == expected
    (verdict,) = backend.store.verdicts()
    assert verdict.drop == expected
    assert sorted(verdict.reason.split("; ")) == sorted(TAGS)
    fingerprints = backend.store.get_session(sid).model_config["fingerprints"]
    assert sorted(fingerprints) == sorted({"seed"} | expected)
    assert len(fingerprints) == len(expected) + 1  # each merged exactly once


def test_processes_opening_a_fresh_store_at_once_migrate_it_once(backend: Backend,
                                                                tmp_path: Path) -> None:
    # A fresh target beside the fixture's: a new file, or a new schema on the same server.
    schema = f"tl_test_{uuid.uuid4().hex[:12]}"
    if backend.name == "sqlite":
        target = str(tmp_path / "fresh" / "state.db")
    else:
        backend.sql(f"CREATE SCHEMA {schema}")
        target = pg_url(schema)
    try:
        _run_together(target, "", 0, tags=("p1", "p2", "p3", "p4"))
        with open_store(target, tmp_path) as store:  # type: ignore[attr-defined]
            assert sorted(s.title for s in store.list_sessions()) == ["p1", "p2", "p3", "p4"]
            with store._db.transaction(write=False) as tx:
                versions = [v for (v,) in tx.all("SELECT version FROM schema_migrations")]
        assert sorted(versions) == list(range(1, len(MIGRATIONS) + 1))
    finally:
        if backend.name == "postgres":
            backend.sql(f"DROP SCHEMA {schema} CASCADE")
