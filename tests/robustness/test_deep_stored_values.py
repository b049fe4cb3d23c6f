"""Stored rows nested past the bound (issue 46 item 3): a database written by hand, by a damaged
disk or by an older build may hold a payload or a skeleton whose JSON nests hundreds of levels.
Reading it reports the row (a ``LoadProblem`` for a payload, ``CorruptPayload`` naming the session,
the position and the branch command for a skeleton) and the rest of the session stays readable;
before, a 300-deep value loaded and broke the next write of it, and a 900-deep one escaped as a
``RecursionError`` from the recursive freeze. Writing such a value is a ``StoreError``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from thoughtline.codecs.shape import MAX_DEPTH
from thoughtline.errors import CorruptPayload, StoreError
from thoughtline.messages import Message, Origin, Reasoning, Text, digest, user
from thoughtline.store import SQLiteStore, encode_message
from thoughtline.store.records import ProblemKind

ORIGIN = Origin(api="anthropic", provider="anthropic", host="api.example", model="m")
LEVELS = [300, 900]  # past the bound; past Python's recursion limit for a recursive walk


def deep_json(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


def answer() -> Message:
    return Message(role="assistant", origin=ORIGIN, parts=(
        Reasoning(kind="text", text="thinking", origin=ORIGIN, native={"sig": "x"}),
        Text(text="the answer", native={"kept": 1})))


def seeded(path: Path) -> tuple[SQLiteStore, str, str]:
    store = SQLiteStore(path)
    record = store.create_session(title="deep")
    message = answer()
    store.append(record.id, [user("question"), message])
    return store, record.id, encode_message(message).id


def rewrite(path: Path, message_id: str, edit: object) -> None:
    """Apply ``edit(skeleton, conn)`` to one message row and store it with a matching digest."""
    with sqlite3.connect(path) as conn:
        [(raw,)] = conn.execute("SELECT skeleton FROM messages WHERE digest = ?", (message_id,))
        skeleton = edit(bytes(raw), conn)  # type: ignore[operator]
        conn.execute("UPDATE messages SET skeleton = ?, skeleton_digest = ? WHERE digest = ?",
                     (skeleton, digest(skeleton), message_id))


@pytest.mark.parametrize("levels", LEVELS)
def test_a_deep_stored_payload_is_a_load_problem_and_the_session_stays_readable(
        tmp_path: Path, levels: int) -> None:
    store, sid, message_id = seeded(tmp_path / "state.db")
    store.close()
    data = deep_json(levels)

    def swap_payload(skeleton: bytes, conn: sqlite3.Connection) -> bytes:
        parsed = orjson.loads(skeleton)
        ref = next(r for r in parsed["r"] if r[1] == "native")
        ref[2], ref[3] = digest(data), len(data)
        conn.execute("INSERT INTO payloads (digest, data) VALUES (?, ?)", (digest(data), data))
        conn.execute("INSERT INTO message_payloads (message_id, payload_digest) VALUES (?, ?)",
                     (message_id, digest(data)))
        return orjson.dumps(parsed)

    rewrite(tmp_path / "state.db", message_id, swap_payload)
    store = SQLiteStore(tmp_path / "state.db")
    try:
        loaded = store.load_history(sid)
    finally:
        store.close()
    [problem] = loaded.problems
    assert problem.kind is ProblemKind.PAYLOAD and problem.seq == 1
    assert f"deeper than {MAX_DEPTH} levels" in problem.detail
    question, kept = (m.message for m in loaded.messages)
    assert question.text == "question" and kept.text == "the answer"
    assert kept.damaged and not kept.reasoning  # the part whose payload failed is left out


@pytest.mark.parametrize("levels", LEVELS)
def test_a_deep_skeleton_names_its_row_and_the_rest_is_shown(tmp_path: Path,
                                                            levels: int) -> None:
    store, sid, message_id = seeded(tmp_path / "state.db")
    store.close()

    def deepen(skeleton: bytes, conn: sqlite3.Connection) -> bytes:
        return skeleton.replace(b'{"kept":1}', deep_json(levels))

    rewrite(tmp_path / "state.db", message_id, deepen)
    store = SQLiteStore(tmp_path / "state.db")
    try:
        with pytest.raises(CorruptPayload) as caught:
            store.load_history(sid)
        shown = store.load_history(sid, skip_damaged=True)
    finally:
        store.close()
    message = str(caught.value)
    assert f"deeper than {MAX_DEPTH} levels" in message and "position 1" in message
    assert f"thoughtline sessions branch {sid} --at 1" in message
    assert [m.message.text for m in shown.messages] == ["question"]
    assert [p.kind for p in shown.problems] == [ProblemKind.TURN]


def test_a_message_too_deep_to_read_back_is_refused_on_write(tmp_path: Path) -> None:
    deep: object = 1
    for _ in range(MAX_DEPTH + 1):
        deep = {"a": deep}
    store = SQLiteStore(tmp_path / "state.db")
    try:
        record = store.create_session(title="deep")
        for part in (Text(text="t", native={"x": deep}),
                     Reasoning(kind="text", text="r", native={"x": deep})):
            with pytest.raises(StoreError, match=f"deeper than {MAX_DEPTH} levels"):
                store.append(record.id, [user("q"), Message(role="assistant", parts=(part,))])
        assert store.load_history(record.id).messages == ()
    finally:
        store.close()
