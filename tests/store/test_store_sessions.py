"""Sessions: lookup by id / prefix / title, tenancy, listing, config, concurrency."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from store_backends import Backend

from thoughtline.errors import NotFound, StoreError
from thoughtline.messages import user
from thoughtline.replay import Verdict
from thoughtline.store import SqlStore, open_store


def test_create_and_get_by_exact_id(store: SqlStore) -> None:
    made = store.create_session(title="alpha", model_config={"provider": "deepseek",
                                                              "api_key_env": "DEEPSEEK_API_KEY"},
                                tenant="t1")
    got = store.get_session(made.id)
    assert got == made
    assert (got.title, got.tenant, got.turns, got.parent_id, got.fork_point) == (
        "alpha", "t1", 0, None, None)
    assert got.model_config == {"provider": "deepseek", "api_key_env": "DEEPSEEK_API_KEY"}


def test_get_by_unique_prefix(store: SqlStore) -> None:
    made = store.create_session()
    others = [store.create_session() for _ in range(3)]
    prefix = next(made.id[:n] for n in range(4, 33)
                  if not any(o.id.startswith(made.id[:n]) for o in others))
    assert store.get_session(prefix).id == made.id


def _shared_prefix_pair(store: SqlStore) -> tuple[str, list[str]]:
    """Make sessions until two share a first hex digit; returns that digit and their ids."""
    seen: dict[str, list[str]] = {}
    while True:
        sid = store.create_session(title="dup").id
        seen.setdefault(sid[0], []).append(sid)
        if len(seen[sid[0]]) == 2:
            return sid[0], seen[sid[0]]


def test_ambiguous_prefix_lists_candidates(store: SqlStore) -> None:
    prefix, ids = _shared_prefix_pair(store)
    with pytest.raises(NotFound) as caught:
        store.get_session(prefix)
    assert "ambiguous" in str(caught.value)
    for sid in ids:
        assert sid in str(caught.value)


def test_a_title_shared_by_several_sessions_is_ambiguous(store: SqlStore) -> None:
    # Issue 10: picking one of them silently ("newest wins") let `sessions rm dup -y` remove an
    # arbitrary session; an ambiguous title is an error listing the candidates.
    old = store.create_session(title="work")
    new = store.create_session(title="work")
    store.append(old.id, [user("touch the old one")])
    with pytest.raises(NotFound) as caught:
        store.get_session("work")
    assert "ambiguous" in str(caught.value)
    assert old.id in str(caught.value) and new.id in str(caught.value)
    store.set_title(old.id, "old work")
    assert store.get_session("work").id == new.id


def test_unknown_ref_raises_not_found(store: SqlStore) -> None:
    store.create_session(title="x")
    for ref in ("nope", "", "zz"):
        with pytest.raises(NotFound):
            store.get_session(ref)
    with pytest.raises(NotFound):
        store.load_history("missing")
    with pytest.raises(NotFound):
        store.append("missing", [user("x")])
    with pytest.raises(NotFound):
        store.set_title("missing", "t")
    with pytest.raises(NotFound):
        store.delete_session("missing")


def test_tenant_filter(store: SqlStore) -> None:
    a = store.create_session(title="shared", tenant="alice")
    b = store.create_session(title="shared", tenant="bob")
    assert store.get_session("shared", tenant="alice").id == a.id
    assert store.get_session(a.id, tenant="alice").id == a.id
    with pytest.raises(NotFound):
        store.get_session(a.id, tenant="bob")
    with pytest.raises(NotFound):
        store.get_session(a.id[:12], tenant="bob")
    with pytest.raises(NotFound, match="ambiguous"):  # no tenant filter: both match
        store.get_session("shared")
    assert store.get_session("shared", tenant="bob").id == b.id
    assert [s.id for s in store.list_sessions(tenant="bob")] == [b.id]
    assert store.latest_session(tenant="alice") == store.get_session(a.id)
    assert store.latest_session(tenant="carol") is None


def test_list_newest_updated_first_with_turns(store: SqlStore) -> None:
    assert store.list_sessions() == [] and store.latest_session() is None
    first = store.create_session(title="first")
    second = store.create_session(title="second")
    store.append(first.id, [user("a"), user("b")])
    listed = store.list_sessions()
    assert [(s.id, s.turns) for s in listed] == [(first.id, 2), (second.id, 0)]
    assert store.latest_session() == listed[0]
    assert [s.id for s in store.list_sessions(limit=1)] == [first.id]


def test_set_title_and_model_config(store: SqlStore) -> None:
    made = store.create_session()
    store.set_title(made.id, "renamed")
    store.set_model_config(made.id, {"verdicts": [{"provider": "x", "drop": ["a"]}],
                                     "fingerprints": ["sha256:ab"]})
    got = store.get_session("renamed")
    assert got.id == made.id
    assert got.model_config["fingerprints"] == ["sha256:ab"]
    assert got.updated_at >= made.updated_at


def test_unserializable_model_config_is_a_store_error(store: SqlStore) -> None:
    with pytest.raises(StoreError, match="JSON"):
        store.create_session(model_config={"bad": {1, 2}})


def test_threads_share_one_store(backend: Backend) -> None:
    store = backend.store
    sid = store.create_session().id
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(10):
                store.append(sid, [user(f"{n}-{i}-a"), user(f"{n}-{i}-b")])
                store.load_history(sid)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    loaded = store.load_history(sid).messages
    assert [m.seq for m in loaded] == list(range(80))
    texts = [m.message.text for m in loaded]
    for i in range(0, 80, 2):  # each append stayed contiguous
        assert texts[i].endswith("-a") and texts[i + 1] == texts[i][:-1] + "b"


def test_two_store_instances_on_one_database(backend: Backend) -> None:
    """Two processes (or gateway machines) each with their own connection."""
    other = open_store(backend.target, Path("/nonexistent-home"))
    try:
        sid = backend.store.create_session().id
        stores = [backend.store, other]

        def worker(n: int) -> None:
            for i in range(10):
                stores[n].append(sid, [user(f"{n}-{i}-a"), user(f"{n}-{i}-b")])
                stores[n].record_verdict(Verdict(provider="p", host="h", model="m",
                                                 drop=frozenset({f"c{n}-{i}"})))

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        texts = [m.message.text for m in other.load_history(sid).messages]
        assert len(texts) == 40
        for i in range(0, 40, 2):
            assert texts[i + 1] == texts[i][:-1] + "b"
        (verdict,) = backend.store.verdicts()
        assert len(verdict.drop) == 20  # no merge lost
    finally:
        other.close()
