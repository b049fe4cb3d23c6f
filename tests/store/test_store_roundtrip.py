"""Messages come back exactly as appended: every part kind, natives, unicode, long opaque values."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from store_backends import Backend
from store_samples import canonical, histories, rich_history, signed_turn

from thoughtline.messages import Message, digest, dumps, user
from thoughtline.store import SqlStore, encode_message


def test_rich_history_round_trips_byte_identical_after_reopen(backend: Backend) -> None:
    history = rich_history()
    sid = backend.store.create_session(title="rich").id
    stored = backend.store.append(sid, history)
    assert [s.seq for s in stored] == list(range(len(history)))
    assert [s.id for s in stored] == [digest(dumps(m)) for m in history]

    loaded = backend.reopen().load_history(sid)

    assert loaded.problems == ()
    assert [s.message for s in loaded.messages] == history
    assert canonical([s.message for s in loaded.messages]) == canonical(history)
    assert [s.id for s in loaded.messages] == [s.id for s in stored]
    assert [s.created_at for s in loaded.messages] == [s.created_at for s in stored]


def test_opaque_strings_are_stored_as_their_exact_utf8_bytes(backend: Backend) -> None:
    turn = signed_turn()
    sid = backend.store.create_session().id
    backend.store.append(sid, [turn])
    signature = turn.parts[0].signature  # type: ignore[union-attr]
    assert signature is not None
    (row,) = backend.sql("SELECT data FROM payloads WHERE digest = ?",
                         [digest(signature.encode("utf-8"))])
    assert bytes(row[0]) == signature.encode("utf-8")


def test_skeleton_holds_no_opaque_value(store: SqlStore) -> None:
    encoded = encode_message(signed_turn())
    for value in encoded.payloads.values():
        assert value not in encoded.skeleton
    assert {(r.part, r.field) for r in encoded.refs} == {(0, "signature"), (2, "data"),
                                                         (3, "native")}


def test_appends_continue_the_sequence_and_bump_updated_at(store: SqlStore) -> None:
    session = store.create_session()
    first = store.append(session.id, [user("a")])
    second = store.append(session.id, [user("b"), user("c")])
    assert [s.seq for s in first + second] == [0, 1, 2]
    again = store.get_session(session.id)
    assert again.updated_at >= second[0].created_at > session.updated_at - 1
    assert again.turns == 3
    assert store.append(session.id, []) == []


def test_identical_messages_share_one_row(backend: Backend) -> None:
    a = backend.store.create_session().id
    b = backend.store.create_session().id
    backend.store.append(a, [user("same"), signed_turn()])
    rows = backend.count("messages"), backend.count("payloads")
    backend.store.append(b, [user("same"), signed_turn(), user("same")])
    assert (backend.count("messages"), backend.count("payloads")) == rows
    assert [m.message for m in backend.store.load_history(b).messages] == [
        user("same"), signed_turn(), user("same")]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=histories)
def test_any_history_round_trips_exactly(store: SqlStore, history: list[Message]) -> None:
    sid = store.create_session().id
    store.append(sid, history)
    loaded = store.load_history(sid)
    assert loaded.problems == ()
    assert canonical([s.message for s in loaded.messages]) == canonical(history)
    assert [s.message for s in loaded.messages] == history
