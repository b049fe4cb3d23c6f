"""Damaged rows of the verdict ledger and of generation notes (issue 46 item 3's audit list):
a hand-edited or damaged ``state.db`` gives a message a person can act on, or is read around —
never a ``JSONDecodeError``, a ``TypeError`` from an unhashable carrier, or a ``RecursionError``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from thoughtline.errors import StoreError
from thoughtline.messages import user
from thoughtline.store import SQLiteStore
from thoughtline.verdicts import Verdict

DAMAGED = ['not json', '[1, 2]', '{"a": 1}', '[' * 2000 + ']' * 2000, '[["nested"]]']


def _verdict(drop: frozenset[str]) -> Verdict:
    return Verdict(provider="acme", host="api.acme.test", model="m-1", drop=drop, pad=False,
                   reason="400 unknown field")


def _damage(path: Path, sql: str, value: str) -> None:
    with sqlite3.connect(path) as db:
        assert db.execute(sql, (value,)).rowcount == 1


@pytest.mark.parametrize("drop", DAMAGED)
def test_a_damaged_verdict_says_how_to_drop_it(tmp_path: Path, drop: str) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    store.record_verdict(_verdict(frozenset({"reasoning_content"})))
    _damage(path, "UPDATE verdicts SET drop_carriers = ?", drop)
    with pytest.raises(StoreError) as caught:
        store.verdicts()
    message = str(caught.value)
    assert "damaged" in message and "acme api.acme.test m-1" in message
    assert "thoughtline routes forget --provider acme --model m-1" in message
    store.close()


@pytest.mark.parametrize("drop", DAMAGED)
def test_a_new_lesson_replaces_a_damaged_verdict(tmp_path: Path, drop: str) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    store.record_verdict(_verdict(frozenset({"reasoning_content"})))
    _damage(path, "UPDATE verdicts SET drop_carriers = ?", drop)
    merged = store.record_verdict(_verdict(frozenset({"thinking"})))
    assert merged.drop == frozenset({"thinking"})
    assert [v.drop for v in store.verdicts()] == [frozenset({"thinking"})]
    store.close()


@pytest.mark.parametrize("note", ['not json', '[1]', '{"a":' * 2000 + '1' + '}' * 2000,
                                  '{"a":' * 200 + '1' + '}' * 200])
def test_a_damaged_generation_note_is_shown_as_damaged(tmp_path: Path, note: str) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    session = store.create_session(title="notes")
    store.append(session.id, [user("first")])
    store.replace_history(session.id, [user("summary")], note={"reason": "compacted"})
    _damage(path, "UPDATE session_generations SET note = ?", note)
    archived, current = store.list_generations(session.id)
    assert "unreadable note" in archived.note["damaged"] and current.current
    assert [m.message.text for m in store.load_history(session.id).messages] == ["summary"]
    store.close()
