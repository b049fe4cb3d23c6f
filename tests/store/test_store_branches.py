"""Branches share their parent's history without copying; deleting a parent keeps them whole."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_backends import Backend
from store_samples import histories, signed_turn

from thoughtline.errors import UsageError
from thoughtline.messages import Message, user
from thoughtline.store import SqlStore


def _texts(store: SqlStore, sid: str) -> list[str]:
    return [m.message.text or m.message.role for m in store.load_history(sid).messages]


def _session_with(store: SqlStore, *texts: str, title: str = "") -> str:
    sid = store.create_session(title=title, model_config={"provider": "p"}, tenant="t").id
    store.append(sid, [user(t) for t in texts])
    return sid


def test_branch_inherits_without_copying_rows(backend: Backend) -> None:
    store = backend.store
    parent = _session_with(store, "a", "b", "c")
    store.append(parent, [signed_turn()])
    before = {t: backend.count(t) for t in ("messages", "payloads", "session_messages")}

    child = store.branch(parent, at=2, title="alt")

    assert {t: backend.count(t) for t in before} == before
    assert (child.parent_id, child.fork_point, child.turns, child.title) == (parent, 2, 2, "alt")
    assert (child.tenant, child.model_config) == ("t", {"provider": "p"})
    assert _texts(store, child.id) == ["a", "b"]

    stored = store.append(child.id, [user("x")])
    assert stored[0].seq == 2
    assert backend.count("session_messages") == before["session_messages"] + 1
    assert _texts(store, child.id) == ["a", "b", "x"]
    assert _texts(store, parent) == ["a", "b", "c", "assistant"]
    assert [m.seq for m in store.load_history(child.id).messages] == [0, 1, 2]


def test_branch_default_takes_everything_and_parent_can_grow(store: SqlStore) -> None:
    parent = _session_with(store, "a", "b")
    child = store.branch(parent)
    store.append(parent, [user("later")])
    assert child.fork_point == 2
    assert _texts(store, child.id) == ["a", "b"]
    assert store.get_session(child.id).turns == 2


def test_branch_of_branch(store: SqlStore) -> None:
    root = _session_with(store, "r0", "r1", "r2", "r3")
    mid = store.branch(root, at=3).id
    store.append(mid, [user("m3"), user("m4"), user("m5")])
    deep = store.branch(mid, at=5).id           # crosses into mid's own rows
    store.append(deep, [user("d5")])
    shallow = store.branch(mid, at=1).id        # stays inside root's rows
    store.append(shallow, [user("s1")])

    assert _texts(store, deep) == ["r0", "r1", "r2", "m3", "m4", "d5"]
    assert _texts(store, shallow) == ["r0", "s1"]
    deeper = store.branch(deep, at=4).id
    assert _texts(store, deeper) == ["r0", "r1", "r2", "m3"]
    assert {s.id: s.turns for s in store.list_sessions()} == {
        root: 4, mid: 6, deep: 6, shallow: 2, deeper: 4}


def test_branch_at_zero_and_out_of_range(store: SqlStore) -> None:
    parent = _session_with(store, "a")
    empty = store.branch(parent, at=0)
    assert store.load_history(empty.id).messages == ()
    store.append(empty.id, [user("fresh")])
    assert _texts(store, empty.id) == ["fresh"]
    for bad in (-1, 2):
        with pytest.raises(UsageError):
            store.branch(parent, at=bad)


def test_deleting_a_parent_keeps_branches_whole(backend: Backend) -> None:
    store = backend.store
    root = _session_with(store, "r0", "r1", "r2")
    mid = store.branch(root, at=2).id
    store.append(mid, [user("m2"), user("m3")])
    child = store.branch(mid, at=3).id
    store.append(child, [user("c3")])
    low = store.branch(mid, at=1).id
    expected = {s: _texts(store, s) for s in (root, child, low)}
    loaded_before = {s: store.load_history(s) for s in (child, low)}

    store.delete_session(mid)

    assert {s: _texts(store, s) for s in expected} == expected
    for sid, before in loaded_before.items():
        assert store.load_history(sid) == before
    assert store.get_session(child).parent_id == root
    assert store.get_session(low).fork_point == 1
    assert {s.id: s.turns for s in store.list_sessions()} == {root: 3, child: 4, low: 1}

    store.delete_session(root)
    assert {s: _texts(store, s) for s in (child, low)} == {
        child: expected[child], low: expected[low]}
    assert store.get_session(child).parent_id is None
    assert store.get_session(child).turns == 4


def test_delete_collects_only_unreferenced_content(backend: Backend) -> None:
    store = backend.store
    keep = _session_with(store, "shared")
    gone = _session_with(store, "shared", "only here")
    store.append(gone, [signed_turn()])
    store.delete_session(gone)
    assert backend.count("messages") == 1
    assert backend.count("payloads") == 0
    assert backend.count("message_payloads") == 0
    assert _texts(store, keep) == ["shared"]


def test_branch_rows_point_at_content_once(backend: Backend) -> None:
    store = backend.store
    parent = _session_with(store, "a")
    turn: Message = signed_turn()
    store.append(parent, [turn])
    for _ in range(3):
        store.append(store.branch(parent).id, [turn])
    assert backend.count("messages") == 2
    assert len({r[0] for r in backend.sql("SELECT digest FROM payloads")}) == backend.count(
        "payloads")


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), history=histories, extra=histories)
def test_any_branch_sees_a_prefix_plus_its_own(store: SqlStore, data: st.DataObject,
                                               history: list[Message],
                                               extra: list[Message]) -> None:
    parent = store.create_session().id
    store.append(parent, history)
    at = data.draw(st.integers(min_value=0, max_value=len(history)), label="at")
    child = store.branch(parent, at=at).id
    store.append(child, extra)
    loaded = store.load_history(child)
    assert [m.message for m in loaded.messages] == history[:at] + extra
    assert [m.seq for m in loaded.messages] == list(range(at + len(extra)))


def test_position_is_where_a_turn_sits_in_the_visible_history(store: SqlStore) -> None:
    parent = _session_with(store)
    first = store.append(parent, [user("a"), user("b"), user("a")])
    later = store.append(parent, [user("c")])
    branch = store.branch(parent, at=2).id
    own = store.append(branch, [user("d")])
    assert store.position(parent, first[0].id) == 3  # its last visible occurrence
    assert store.position(parent, later[0].id) == 4
    assert store.position(branch, first[1].id) == 2  # inherited
    assert store.position(branch, first[0].id) == 1  # the later copy is past the fork
    assert store.position(branch, later[0].id) is None  # not visible from the branch
    assert store.position(branch, own[0].id) == 3
