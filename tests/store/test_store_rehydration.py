"""The gateway's rehydration index on every backend: atomic append + index, per-tenant lookups,
session scoping, newest wins, opaque values byte-identical, corrupt payloads never returned."""

from __future__ import annotations

import orjson
from store_backends import Backend

from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    dumps,
    user,
)
from thoughtline.store.rehydration import CALL, CONTENT, IndexKey

ORIGIN = Origin(api="openai-chat", provider="deepseek", host="api.deepseek.com", model="m")


def _turn(text: str = "answer", signature: str = "sig-\u00e9\u0000-bytes") -> Message:
    return Message(role="assistant", origin=ORIGIN, parts=(
        Reasoning(kind="signed", text="thinking …", signature=signature, origin=ORIGIN),
        Reasoning(kind="encrypted", data="ZW5jcnlwdGVk", origin=ORIGIN,
                  native={"openrouter": {"type": "reasoning.encrypted", "data": "ZW5jcnlwdGVk",
                                         "id": "rs_1", "format": "openai-responses-v1"}}),
        Text(text=text), ToolCall(id="call_1", name="f", arguments='{"a": 1}')))


def _keys(name: str) -> list[IndexKey]:
    return [IndexKey(kind=CALL, key=f"call-{name}"), IndexKey(kind=CONTENT, key=f"d-{name}")]


def test_an_indexed_turn_comes_back_byte_identical_for_its_tenant_only(backend: Backend) -> None:
    store = backend.store
    session = store.create_session(tenant="alice")
    turn = _turn()
    stored = store.append_indexed(session.id, [user("q"), turn], tenant="alice", keys=_keys("x"))
    assert [s.seq for s in stored] == [0, 1]
    hits = store.rehydrate("alice", [IndexKey(kind=CALL, key="call-x"), None,
                                     IndexKey(kind=CONTENT, key="d-x"),
                                     IndexKey(kind=CONTENT, key="d-unknown")])
    assert hits[1] is None and hits[3] is None
    for hit in (hits[0], hits[2]):
        assert hit is not None and hit.session_id == session.id
        assert dumps(hit.message) == dumps(turn)
        assert orjson.dumps(hit.message.parts[1].native) == orjson.dumps(turn.parts[1].native)
    assert store.rehydrate("bob", [IndexKey(kind=CALL, key="call-x")]) == [None]
    assert store.load_history(session.id).messages[1].id == stored[1].id


def test_newest_wins_and_a_session_scope_limits_the_lookup(backend: Backend) -> None:
    store = backend.store
    older = store.create_session(tenant="t")
    newer = store.create_session(tenant="t")
    store.append_indexed(older.id, [_turn("old")], tenant="t", keys=_keys("same"))
    store.append_indexed(newer.id, [_turn("new")], tenant="t", keys=_keys("same"))
    key = IndexKey(kind=CONTENT, key="d-same")
    [newest] = store.rehydrate("t", [key])
    assert newest is not None and newest.message.text == "new"
    [scoped] = store.rehydrate("t", [key], session_id=older.id)
    assert scoped is not None and scoped.message.text == "old"


def test_a_corrupt_payload_is_never_returned(backend: Backend) -> None:
    store = backend.store
    session = store.create_session(tenant="t")
    store.append_indexed(session.id, [_turn()], tenant="t", keys=_keys("c"))
    store = backend.reopen()  # nothing verified in memory: the lookup reads the rows
    backend.sql("UPDATE payloads SET data = ? WHERE data = ?",
                [b"tampered", "sig-\u00e9\u0000-bytes".encode()])
    assert store.rehydrate("t", [IndexKey(kind=CALL, key="call-c")]) == [None]


def test_deleting_a_session_drops_its_index_rows(backend: Backend) -> None:
    store = backend.store
    session = store.create_session(tenant="t")
    store.append_indexed(session.id, [_turn()], tenant="t", keys=_keys("d"))
    assert backend.count("rehydration") == 2
    store.delete_session(session.id)
    assert backend.count("rehydration") == 0
    assert store.rehydrate("t", [IndexKey(kind=CALL, key="call-d")]) == [None]
