"""SQLite-only guarantees: file permissions, pragmas, several processes, crash safety."""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from thoughtline.errors import StoreError
from thoughtline.messages import user
from thoughtline.store import SQLiteStore, open_store

#: Appends turns of three messages (one with a large signature) forever, printing each commit.
_WRITER = textwrap.dedent("""
    import sys
    from thoughtline.messages import Message, Reasoning, user
    from thoughtline.store import SQLiteStore

    store = SQLiteStore(sys.argv[1])
    sid, tag, count = sys.argv[2], sys.argv[3], int(sys.argv[4])
    i = 0
    while count < 0 or i < count:
        thinking = Reasoning(kind="signed", text=f"{tag}{i}", signature=f"{tag}{i}" + "s" * 20000)
        store.append(sid, [user(f"{tag}{i}:q"), Message(role="assistant", parts=(thinking,)),
                           user(f"{tag}{i}:end")])
        print(i, flush=True)
        i += 1
""")


def _writer(path: Path, sid: str, tag: str, count: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, "-c", _WRITER, str(path), sid, tag, str(count)],
                            stdout=subprocess.PIPE, text=True, env=env)


@pytest.fixture
def private_umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("private_umask")
def test_state_db_and_its_wal_files_are_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_store(None, home) as store:  # type: ignore[attr-defined]
        store.append(store.create_session().id, [user("x")])
        db = home / "state.db"
        assert _mode(home) == 0o700
        for path in (db, db.with_name("state.db-wal"), db.with_name("state.db-shm")):
            assert path.exists() and _mode(path) == 0o600, path


@pytest.mark.usefixtures("private_umask")
def test_a_lax_existing_file_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.touch(mode=0o644)
    path.chmod(0o644)
    SQLiteStore(path).close()
    assert _mode(path) == 0o600


def test_connection_pragmas(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        conn = store._db._conn  # type: ignore[attr-defined]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=str(path)):
        SQLiteStore(path)


def test_several_processes_append_to_one_session(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as store:
        sid = store.create_session().id
        procs = [_writer(path, sid, tag, 15) for tag in ("a", "b", "c")]
        for i in range(15):  # this process writes too
            store.append(sid, [user(f"main{i}")])
        for proc in procs:
            assert proc.wait(timeout=60) == 0
        loaded = store.load_history(sid)
    assert loaded.problems == ()
    assert [m.seq for m in loaded.messages] == list(range(15 + 3 * 15 * 3))
    texts = [m.message.text for m in loaded.messages]
    for tag in ("a", "b", "c"):
        starts = [i for i, t in enumerate(texts) if t.startswith(tag) and t.endswith(":q")]
        assert len(starts) == 15
        for i in starts:  # every append is contiguous
            assert texts[i + 2] == texts[i][:-2] + ":end"


def test_sigkill_mid_append_leaves_every_committed_turn_loadable(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as store:
        sid = store.create_session().id
    committed = 0
    for round_no, stop_after in enumerate((25, 40)):
        proc = _writer(path, sid, f"r{round_no}-", -1)
        assert proc.stdout is not None
        for line in proc.stdout:
            committed_here = int(line) + 1
            if committed_here >= stop_after:
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        committed += committed_here

    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
    raw.close()
    with SQLiteStore(path) as store:
        loaded = store.load_history(sid)
    assert loaded.problems == ()
    messages = loaded.messages
    assert len(messages) % 3 == 0  # all or nothing per append
    assert len(messages) // 3 >= committed  # nothing printed as committed was lost
    for i in range(0, len(messages), 3):
        q, thinking, end = (m.message for m in messages[i:i + 3])
        marker = q.text.removesuffix(":q")
        assert end.text == f"{marker}:end"
        assert thinking.reasoning[0].signature == marker + "s" * 20000


#: What ``sessions compact`` does to the file from its own process: replace a session's history.
_COMPACTOR = textwrap.dedent("""
    import sys
    from thoughtline.messages import user
    from thoughtline.store import SQLiteStore

    with SQLiteStore(sys.argv[1]) as store:
        kept = [m.message for m in store.load_history(sys.argv[2]).messages][-2:]
        store.replace_history(sys.argv[2], [user("summary"), *kept],
                              note={"ended_by": "compaction"})
""")


def test_a_second_store_in_the_process_keeps_the_first_ones_wal_safe(tmp_path: Path) -> None:
    """A long-lived store (the inspector, a gateway) and another one opened and closed in the same
    process (an import, ``sessions migrate``): the second one must not release the first one's
    lock on the file (closing any descriptor of a file drops all of the process's POSIX locks on
    it). Without that lock another process's compaction, closing, took itself for the last user
    and deleted the -wal and -shm under the first store, whose next read after a new write was
    "file is not a database"."""
    path = tmp_path / "state.db"
    long_lived = SQLiteStore(path)
    try:
        sid = long_lived.import_session(title="six", model_config={},
                                        messages=[user(f"turn {i}") for i in range(6)]).id
        SQLiteStore(path).close()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        subprocess.run([sys.executable, "-c", _COMPACTOR, str(path), sid], env=env, check=True,
                       timeout=60)
        assert path.with_name("state.db-wal").exists()  # still in use by long_lived
        with SQLiteStore(path) as other:
            added = other.import_session(title="later", model_config={},
                                         messages=[user(f"q {i}" * 50) for i in range(200)]).id
        assert [m.message.text for m in long_lived.load_history(sid).messages] == [
            "summary", "turn 4", "turn 5"]
        assert len(long_lived.load_history(added).messages) == 200
    finally:
        long_lived.close()
