"""Generations at the store level, on SQLite and PostgreSQL: replace, restore, branches detached
with exactly what they inherited, and deletion collecting content only when nothing — no session
and no archived generation — references it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from thoughtline.compaction import checkpoint
from thoughtline.errors import StoreError, UsageError
from thoughtline.messages import Message, Reasoning, Text, dumps, user
from thoughtline.store import SqlStore, encode_message, open_store

PG_URL = os.environ.get("THOUGHTLINE_TEST_DATABASE_URL",
                        "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    if request.param == "sqlite":
        opened = open_store(tmp_path / "state.db", tmp_path)
        yield opened  # type: ignore[misc]
        opened.close()
        return
    admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=5)
    schema = f"tl_gen_{uuid.uuid4().hex[:12]}"
    admin.execute(f"CREATE SCHEMA {schema}")
    opened = open_store(f"{PG_URL}?options=-csearch_path%3D{schema}", tmp_path)
    try:
        yield opened  # type: ignore[misc]
    finally:
        opened.close()
        admin.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()


def _thought(i: int) -> Message:
    return Message(role="assistant", parts=(
        Reasoning(kind="signed", text=f"thinking {i}", signature=f"sig-{i}-" + "s" * 64),
        Text(text=f"answer {i}")))


def _history(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out += [user(f"q{i}"), _thought(i)]
    return out


def _ids(store: SqlStore, sid: str) -> list[str]:
    return [m.id for m in store.load_history(sid).messages]


def _count(store: SqlStore, table: str) -> int:
    with store._db.transaction(write=False) as tx:  # raw counts, for the collection checks
        row = tx.one(f"SELECT COUNT(*) FROM {table}")
    assert row is not None
    return int(row[0])


def test_replace_archives_restore_returns_and_branches_keep_their_view(store: SqlStore) -> None:
    parent = store.create_session(title="p")
    store.append(parent.id, _history(3))
    session = store.branch(parent.id, at=4, title="s")  # inherits 4 of the parent's messages
    store.append(session.id, _history(2))
    child = store.branch(session.id, at=6, title="c")
    store.append(child.id, [user("child's own")])
    before = _ids(store, session.id)
    child_before = _ids(store, child.id)
    assert len(before) == 8 and len(child_before) == 7

    compacted = [checkpoint("summary"), *_history(2)[-2:]]
    expect = (8, before[-1])
    assert store.replace_history(session.id, compacted, expect=expect,
                                 note={"ended_by": "compaction"}) == 0
    assert [dumps(m.message) for m in store.load_history(session.id).messages] == [
        dumps(m) for m in compacted]
    assert _ids(store, child.id) == child_before  # the branch sees what it inherited
    assert store.get_session(child.id).parent_id == session.id
    assert store.get_session(session.id).parent_id == parent.id  # lineage kept
    assert [mid for _, mid in store.generation_ids(session.id, 0)] == before

    with pytest.raises(StoreError, match="changed while"):
        store.replace_history(session.id, [user("x")], expect=expect)
    with pytest.raises(UsageError, match="no archived generation 5"):
        store.restore_generation(session.id, 5)

    assert store.restore_generation(session.id, 0) == 2
    assert _ids(store, session.id) == before
    listed = store.list_generations(session.id)
    assert [(g.number, g.turns, g.current) for g in listed] == [(0, 8, False), (1, 3, False),
                                                               (2, 8, True)]
    assert listed[1].note == {"ended_by": "restore", "restored": 0}


def test_deleting_collects_content_only_when_no_generation_needs_it(store: SqlStore) -> None:
    session = store.create_session(title="s")
    store.append(session.id, _history(3))
    branch = store.branch(session.id, title="b")
    ids = _ids(store, session.id)
    store.replace_history(session.id, [checkpoint("summary")], expect=(6, ids[-1]))
    # the branch's rows and the archived generation both reference the old messages
    store.delete_session(branch.id)
    assert _ids(store, session.id) == [encode_message(checkpoint("summary")).id]
    assert [mid for _, mid in store.generation_ids(session.id, 0)] == ids
    assert store.restore_generation(session.id, 0) == 2
    loaded = store.load_history(session.id)
    assert not loaded.problems and [m.id for m in loaded.messages] == ids  # payloads intact
    store.delete_session(session.id)
    assert _count(store, "messages") == 0 and _count(store, "payloads") == 0
    assert _count(store, "session_generations") == 0 and _count(store, "generation_messages") == 0
