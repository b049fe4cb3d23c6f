"""``sessions migrate``: a SQLite store copied into another store byte-identical, verified,
safe to re-run. The target is each backend in turn (PostgreSQL is the one that matters)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from store_backends import Backend
from store_samples import gemini_turn, rich_history, signed_turn

from thoughtline.cli.main import cli
from thoughtline.messages import dumps, user
from thoughtline.replay import Verdict
from thoughtline.store import SQLiteStore, SqlStore, encode_message
from thoughtline.store.transfer import copy_store
from thoughtline.store.wireforms import WireForm

_TABLES = {
    "sessions": "SELECT id, title, created_at, updated_at, parent_id, fork_point, model_config, "
                "tenant FROM sessions ORDER BY id",
    "session_messages": "SELECT session_id, seq, message_id, created_at FROM session_messages "
                        "ORDER BY session_id, seq",
    "messages": "SELECT digest, skeleton, skeleton_digest FROM messages ORDER BY digest",
    "message_payloads": "SELECT message_id, payload_digest FROM message_payloads "
                        "ORDER BY message_id, payload_digest",
    "payloads": "SELECT digest, data FROM payloads ORDER BY digest",
    "wire_forms": "SELECT message_id, plan, meta, digest, data FROM wire_forms "
                  "ORDER BY message_id, plan",
    "session_generations": "SELECT session_id, generation, created_at, archived_at, parent_id, "
                           "fork_point, turns, note FROM session_generations "
                           "ORDER BY session_id, generation",
    "generation_messages": "SELECT session_id, generation, seq, message_id FROM "
                           "generation_messages ORDER BY session_id, generation, seq",
}


def _rows(store: SqlStore, table: str) -> list[tuple[object, ...]]:
    with store._db.transaction(write=False) as tx:
        return [tuple(bytes(v) if isinstance(v, memoryview | bytes) else v for v in row)
                for row in tx.all(_TABLES[table])]


def _source(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A SQLite store with every kind of content: opaque payloads, branches, tenants, verdicts."""
    path = tmp_path / "old" / "state.db"
    with SQLiteStore(path) as store:
        main = store.create_session(title="main", tenant="alice",
                                    model_config={"provider": {"id": "p"},
                                                  "fingerprints": ["sha256:ff"]}).id
        store.append(main, rich_history())
        child = store.branch(main, at=3, title="child").id
        store.append(child, [gemini_turn(), user("child only")])
        grandchild = store.branch(child, at=4).id
        store.append(grandchild, [signed_turn()])
        empty = store.create_session(title="empty").id
        store.record_verdict(Verdict(provider="p", host="h", model="m",
                                     drop=frozenset({"reasoning"}), pad=True, reason="r"))
        compacted = store.create_session(title="compacted").id
        store.append(compacted, [user("old question"), signed_turn()])
        store.replace_history(compacted, [user("summary of the old turns")])
        first = store.load_wire_forms(main, "plan-a").entries[0][1]
        store.put_wire_forms([WireForm(message_id=first, plan="plan-a", meta='{"role":"system"}',
                                       data=b'{"role":"system","content":"be brief"}')])
    return path, {"main": main, "child": child, "grandchild": grandchild, "empty": empty}


def _histories(store: SqlStore) -> dict[str, list[bytes]]:
    return {s.id: [dumps(m.message) for m in store.load_history(s.id).messages]
            for s in store.list_sessions()}


def test_every_row_arrives_byte_identical(backend: Backend, tmp_path: Path) -> None:
    path, ids = _source(tmp_path)
    with SQLiteStore(path) as source:
        report = copy_store(source, backend.store)
        assert report.problems == []
        assert report.sessions == 5 and report.verdicts == 1
        for table in _TABLES:
            assert _rows(backend.store, table) == _rows(source, table), table
        assert _histories(backend.store) == _histories(source)
        assert backend.store.list_sessions() == source.list_sessions()
        assert backend.store.verdicts() == source.verdicts()
    signature = signed_turn().parts[0].signature  # type: ignore[union-attr]
    assert signature is not None
    payloads = dict(_rows(backend.store, "payloads"))
    assert payloads[encode_message(signed_turn()).refs[0].digest] == signature.encode("utf-8")
    assert backend.store.get_session(ids["grandchild"]).parent_id == ids["child"]


def test_re_running_changes_nothing_and_then_copies_what_is_new(backend: Backend,
                                                                tmp_path: Path) -> None:
    path, ids = _source(tmp_path)
    with SQLiteStore(path) as source:
        copy_store(source, backend.store)
        before = {t: _rows(backend.store, t) for t in _TABLES}
        again = copy_store(source, backend.store)
        assert again.problems == []
        assert {t: _rows(backend.store, t) for t in _TABLES} == before
        assert backend.store.verdicts() == source.verdicts()

        source.append(ids["child"], [user("added later"), signed_turn()])
        source.create_session(title="new one")
        third = copy_store(source, backend.store)
        assert third.problems == []
        assert _histories(backend.store) == _histories(source)
        for table in ("session_messages", "messages", "payloads"):
            assert _rows(backend.store, table) == _rows(source, table), table


def test_a_corrupt_source_payload_is_reported_and_never_copied(backend: Backend,
                                                               tmp_path: Path) -> None:
    path, ids = _source(tmp_path)
    bad = encode_message(signed_turn()).refs[0].digest
    with SQLiteStore(path) as source, source._db.transaction(write=True) as tx:
        tx.execute("UPDATE payloads SET data = ? WHERE digest = ?", (b"tampered", bad))
    with SQLiteStore(path) as source:
        report = copy_store(source, backend.store)
    assert any(bad in p and "corrupt" in p for p in report.problems)
    assert bad not in dict(_rows(backend.store, "payloads"))
    loaded = backend.store.load_history(ids["main"])
    assert [p.digest for p in loaded.problems] == [bad]  # reported on load, never sent


def test_a_session_that_diverged_in_the_target_is_reported(backend: Backend,
                                                           tmp_path: Path) -> None:
    path, ids = _source(tmp_path)
    with SQLiteStore(path) as source:
        copy_store(source, backend.store)
        source.append(ids["empty"], [user("written in the source")])
        backend.store.append(ids["empty"], [user("written in the target")])
        report = copy_store(source, backend.store)
    assert len(report.problems) == 1 and "diverged" in report.problems[0]
    assert [m.message.text for m in backend.store.load_history(ids["empty"]).messages] == [
        "written in the target"]


def test_the_cli_command(backend: Backend, tmp_path: Path) -> None:
    path, _ = _source(tmp_path)
    runner = CliRunner()
    args = ["--home", str(tmp_path / "home"), "sessions", "migrate", "--to", backend.target,
            "--from", str(path.parent)]
    first = runner.invoke(cli, args, catch_exceptions=False)
    assert first.exit_code == 0, first.stderr
    progress = first.stderr.splitlines()
    assert progress[0].startswith(f"copying {path}")
    assert [line.split("]")[0] for line in progress[1:]] == [f"[{n}/5" for n in range(1, 6)]
    assert all("copied and verified" in line for line in progress[1:])
    (summary,) = first.stdout.splitlines()
    assert summary.startswith("migrated 5 session(s)") and "all digests verified" in summary
    second = runner.invoke(cli, args, catch_exceptions=False)
    assert second.exit_code == 0 and second.stdout == first.stdout


def test_the_cli_refuses_a_missing_source_or_itself(tmp_path: Path) -> None:
    runner = CliRunner()
    home = str(tmp_path / "home")
    missing = runner.invoke(cli, ["--home", home, "sessions", "migrate", "--to",
                                  str(tmp_path / "x.db")])
    assert missing.exit_code == 2 and "no SQLite store" in missing.stderr
    path, _ = _source(tmp_path)
    itself = runner.invoke(cli, ["--home", home, "sessions", "migrate", "--to", str(path),
                                 "--from", str(path)])
    assert itself.exit_code == 2 and "being copied" in itself.stderr


def test_the_cli_exits_1_on_a_problem(backend: Backend, tmp_path: Path) -> None:
    path, _ = _source(tmp_path)
    with SQLiteStore(path) as source, source._db.transaction(write=True) as tx:
        tx.execute("DELETE FROM payloads WHERE digest = ?",
                   (encode_message(signed_turn()).refs[0].digest,))
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "sessions", "migrate",
                                      "--to", backend.target,
                                      "--from", str(path)])
    assert result.exit_code == 1
    assert "problem: " in result.stderr and "missing" in result.stderr
    assert "problem(s), listed above" in result.stdout
