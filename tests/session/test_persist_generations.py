"""``persist.write_turn`` for a compaction (``TurnWrite.replaces``): the guarantees of a turn's
write — the head check, a branch on a moved head, one outcome after a cut ``COMMIT``, the rescue
file — hold for a new generation too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from thoughtline.errors import StoreUnavailable
from thoughtline.messages import Message, dumps, user
from thoughtline.persist import NewGeneration, TurnWrite, Unsaved, write_turn
from thoughtline.store import SQLiteStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "state.db")
    yield opened
    opened.close()


def _session(store: SQLiteStore) -> tuple[Any, list[str]]:
    record = store.create_session(title="t")
    stored = store.append(record.id, [user(f"turn {i}") for i in range(4)])
    return store.get_session(record.id), [m.id for m in stored]


def _compaction(record: Any, ids: list[str]) -> TurnWrite:
    return TurnWrite(session=record, at=len(ids), messages=[user("summary"), user("turn 3")],
                     replaces=NewGeneration(head=ids[-1], note={"ended_by": "compaction"}))


def _texts(store: SQLiteStore, session_id: str) -> list[str]:
    return [m.message.text for m in store.load_history(session_id).messages]


def test_a_compaction_of_the_head_replaces_the_history_as_a_new_generation(
        store: SQLiteStore, tmp_path: Path) -> None:
    record, ids = _session(store)
    written = write_turn(store, _compaction(record, ids), rescue_dir=tmp_path / "rescue")
    assert (written.session.id, written.branched, written.generation) == (record.id, False, 0)
    assert _texts(store, record.id) == ["summary", "turn 3"]
    assert [mid for _, mid in store.generation_ids(record.id, 0)] == ids


def test_a_head_moved_by_another_writer_puts_the_compaction_on_a_branch(
        store: SQLiteStore, tmp_path: Path) -> None:
    record, ids = _session(store)
    store.append(record.id, [user("another writer")])
    written = write_turn(store, _compaction(record, ids), rescue_dir=tmp_path / "rescue")
    assert written.branched and written.branch == written.session.id != record.id
    assert _texts(store, written.session.id) == ["summary", "turn 3"]
    assert _texts(store, record.id) == [*(f"turn {i}" for i in range(4)), "another writer"]
    assert [mid for _, mid in store.generation_ids(written.session.id, 0)] == ids


def test_a_compaction_of_a_history_the_session_no_longer_holds_is_rescued(
        store: SQLiteStore, tmp_path: Path) -> None:
    # The same count of turns, but not ending with the message it read (another process
    # compacted or restored meanwhile): no branch would hold what it was made from.
    record, ids = _session(store)
    other = _compaction(record, [*ids[:-1], "not-the-last-message-read"])
    with pytest.raises(Unsaved, match="nothing of it was stored"):
        write_turn(store, other, rescue_dir=tmp_path / "rescue")
    assert _texts(store, record.id) == [f"turn {i}" for i in range(4)]
    assert [s.id for s in store.list_sessions()] == [record.id]  # no branch was made
    assert len(list((tmp_path / "rescue").iterdir())) == 1


@pytest.mark.parametrize("landed", [True, False])
def test_a_commit_cut_is_read_back_and_never_written_twice(
        store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        landed: bool) -> None:
    record, ids = _session(store)
    real = store.replace_history
    calls: list[int] = []

    def cut(*args: Any, **kwargs: Any) -> int:
        calls.append(1)
        if landed:
            real(*args, **kwargs)  # the COMMIT reached the server ...
        raise StoreUnavailable("the connection broke while committing", retry_safe=False)

    monkeypatch.setattr(store, "replace_history", cut)
    write = _compaction(record, ids)
    if landed:
        written = write_turn(store, write, rescue_dir=tmp_path / "rescue")
        assert written.generation == 0 and not written.branched
        assert _texts(store, record.id) == ["summary", "turn 3"]
    else:
        with pytest.raises(Unsaved, match="nothing of it was stored") as raised:
            write_turn(store, write, rescue_dir=tmp_path / "rescue")
        assert _texts(store, record.id) == [f"turn {i}" for i in range(4)]
        saved = orjson.loads(raised.value.path.read_bytes())  # type: ignore[union-attr]
        assert saved["replaces"] == {"turns": 4, "head": ids[-1],
                                     "note": {"ended_by": "compaction"}}
        assert [m["parts"][0]["text"] for m in saved["messages"]] == ["summary", "turn 3"]
    assert calls == [1]
    assert not landed or not (tmp_path / "rescue").exists()


def test_the_rescued_messages_are_the_compacted_history_byte_for_byte(
        store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from thoughtline.errors import StoreError
    from thoughtline.messages import message_from_json

    record, ids = _session(store)

    def full(*args: Any, **kwargs: Any) -> int:
        raise StoreError("disk full")

    monkeypatch.setattr(store, "replace_history", full)
    write = _compaction(record, ids)
    with pytest.raises(Unsaved, match="compacted history was made but could not be stored"):
        write_turn(store, write, rescue_dir=tmp_path / "rescue", attempts=(0.0, 0.0))
    (path,) = (tmp_path / "rescue").iterdir()
    rescued: list[Message] = [message_from_json(m)
                              for m in orjson.loads(path.read_bytes())["messages"]]
    assert [dumps(m) for m in rescued] == [dumps(m) for m in write.messages]
