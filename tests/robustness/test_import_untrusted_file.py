"""Items 4 and 1 (import side): ``sessions import`` treats its file as untrusted input.

Every rejection is one message naming the place in the file, exit 2, no traceback, and nothing
stored; an accepted import is marked so its provider URL and key variable are not trusted.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cli_support import Cli

from thoughtline import config

PROVIDER = {"id": "deepseek", "api": "openai-chat", "base_url": "https://evil.example/v1",
            "key_env": "AWS_SECRET_ACCESS_KEY", "model": "deepseek-reasoner", "echo": "auto"}


def export(messages: list[Any] | None = None, **session: Any) -> dict[str, Any]:
    meta = {"id": "x", "title": "imported", "created_at": 1.0, "updated_at": 2.0,
            "model_config": {"provider": dict(PROVIDER), "verdicts": [], "fingerprints": []}}
    meta.update(session)
    return {"format": "thoughtline.session/1", "session": meta,
            "messages": messages if messages is not None else [
                {"role": "user", "parts": [{"t": "text", "text": "hello"}]},
                {"role": "assistant", "parts": [
                    {"t": "reasoning", "kind": "signed", "text": "hm", "signature": "sig"},
                    {"t": "text", "text": "hi"}]}]}


def rows(home: Path) -> tuple[int, int]:
    db = home / "state.db"
    if not db.exists():
        return 0, 0
    with sqlite3.connect(db) as conn:
        return (conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
                conn.execute("SELECT COUNT(*) FROM session_messages").fetchone()[0])


def run_import(cli: Cli, tmp_path: Path, data: Any, *, raw: bytes | None = None):
    path = tmp_path / "in.json"
    if raw is None:
        raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    path.write_bytes(raw)
    return cli.run("sessions", "import", str(path))


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def bad_message(**changes: Any) -> dict[str, Any]:
    message = {"role": "assistant", "parts": [{"t": "text", "text": "hi"}]}
    message.update(changes)
    return export([message])


CASES = [
    ([1, 2, 3], "the top level must be a JSON object, not list"),
    (None, "the top level must be a JSON object, not null"),
    ("hello", "the top level must be a JSON object, not str"),
    (export(model_config="x"), "session.model_config must be a JSON object"),
    (json.dumps(export([])).replace('"messages": []', '"messages": ' + "[" * 5000 + "]" * 5000)
     .encode(), "nested too deeply"),
    (export([{"role": "user", "parts": [{"t": "text", "text": nested(100)}]}]),
     "nested more than"),
    (bad_message(role="wizard"), "messages[0].role must be one of"),
    (bad_message(parts=[{"t": "text", "text": 5}]), "messages[0].parts[0].text must be a string"),
    (export(created_at="yesterday"), "session.created_at must be a number"),
    (bad_message(parts=[{"t": "reasoning", "kind": "signed", "text": "plain"}]),
     "messages[0].parts[0].signature is missing"),
    (bad_message(parts=[{"t": "reasoning", "kind": "mystery", "text": "x"}]),
     "messages[0].parts[0].kind must be one of"),
    (export(model_config={"provider": dict(PROVIDER), "verdicts": [{"drop": 3}]}),
     "session.model_config.verdicts[0].provider is missing"),
    (export(model_config={"provider": dict(PROVIDER), "verdicts": ["x"]}),
     "session.model_config.verdicts[0] must be a JSON object"),
    (export(model_config={"verdicts": []}), "session.model_config.provider must be a JSON object"),
    (export(model_config={"provider": {"id": "deepseek"}}),
     "session.model_config.provider.model is missing"),
    ({"format": "other"}, "format must be 'thoughtline.session/1'"),
    # Issue 22 item 4: each of these was a traceback (or, for NaN, a silent change) before.
    (bad_message(role=["assistant"]), "messages[0].role must be one of"),
    (bad_message(role={"r": 1}), "messages[0].role must be one of"),
    (bad_message(parts=[{"t": "reasoning", "kind": ["text"], "text": "x"}]),
     "messages[0].parts[0].kind must be one of"),
    (bad_message(parts=[{"t": "text", "text": "x", "native": {"google": {"n": 2**64}}}]),
     "messages[0].parts[0].native.google.n is an integer outside the 64-bit range"),
    (bad_message(native={"google": {"n": [1, -(2**63) - 1]}}),
     "messages[0].native.google.n[1] is an integer outside the 64-bit range"),
    (bad_message(parts=[{"t": "text", "text": "x", "native": {"google": {"n": float("nan")}}}]),
     "messages[0].parts[0].native.google.n is NaN, which is not a JSON number"),
    (bad_message(parts=[{"t": "text", "text": "x", "native": {"g": {"n": float("inf")}}}]),
     "messages[0].parts[0].native.g.n is Infinity, which is not a JSON number"),
    (bad_message(native={"g": {"n": float("-inf")}}),
     "messages[0].native.g.n is -Infinity, which is not a JSON number"),
    (json.dumps(bad_message(native={"g": {"n": 1.5}})).replace("1.5", "1e999").encode(),
     "messages[0].native.g.n is a number too large for a JSON number"),
    (export(model_config={"provider": dict(PROVIDER), "params": {"max_tokens": 2**70}}),
     "session.model_config.params.max_tokens is an integer outside the 64-bit range"),
    (bad_message(parts=[{"t": "reasoning", "kind": "encrypted", "data": "x",
                         "native": {"openai-responses": "rs_1"}}]),
     "messages[0].parts[0].native.openai-responses must be a JSON object, not str"),
    (bad_message(native={"copilot": ["x"]}), "messages[0].native.copilot must be a JSON object"),
    (bad_message(parts=[{"t": "text", "text": "a", "native": {"openai-responses": {
        "item": "msg_1"}}}]), "messages[0].parts[0].native.openai-responses.item must be a JSON "
     "object"),
    (bad_message(parts=[{"t": "text", "text": "a", "native": {"openai-responses": {
        "item": {"type": "message", "content": 5}}}}]),
     "messages[0].parts[0].native.openai-responses.item.content must be a list"),
    (bad_message(parts=[{"t": "text", "text": "a", "native": {"openai-responses": {
        "item": {"content": [{"type": ["output_text"]}]}}}}]),
     "messages[0].parts[0].native.openai-responses.item.content[0].type must be a string"),
    (bad_message(origin={"api": "openai-chat", "provider": "deepseek", "model": None}),
     "messages[0].origin.model must be a string"),
    (bad_message(parts=[{"t": "reasoning", "kind": "text", "text": "r", "origin": {
        "api": "openai-chat", "provider": "deepseek", "host": None}}]),
     "messages[0].parts[0].origin.host must be a string"),
]


@pytest.mark.parametrize(("data", "message"), CASES, ids=range(len(CASES)))
def test_malformed_exports_are_one_clear_error_and_store_nothing(
        cli: Cli, tmp_path: Path, data: Any, message: str) -> None:
    result = run_import(cli, tmp_path, data)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert message in result.stderr, result.stderr
    assert "nothing was imported" in result.stderr
    assert result.stdout == ""
    assert rows(cli.home) == (0, 0)


def test_a_lone_surrogate_is_rejected_not_stored_as_an_empty_session(
        cli: Cli, tmp_path: Path) -> None:
    text = json.dumps(export([{"role": "user", "parts": [{"t": "text", "text": "PLACE"}]}]))
    raw = text.replace("PLACE", "a\\ud800b").encode()
    result = run_import(cli, tmp_path, None, raw=raw)
    assert result.returncode == 2, result.stderr
    assert "messages[0].parts[0].text holds a lone surrogate" in result.stderr
    assert rows(cli.home) == (0, 0)


def test_non_utf8_and_non_json_files(cli: Cli, tmp_path: Path) -> None:
    for raw, message in ((b"\xff\xfe{}", "is not UTF-8"), (b"{nope", "is not JSON")):
        result = run_import(cli, tmp_path, None, raw=raw)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    assert rows(cli.home) == (0, 0)


def test_a_failure_while_storing_leaves_nothing_half_written(cli: Cli, tmp_path: Path,
                                                              monkeypatch: Any) -> None:
    from thoughtline.store import history

    calls = {"n": 0}
    real = history._write_content

    def failing(tx: Any, encoded: Any) -> None:
        # One call writes every message's content rows (in key order, see history.append):
        # they land inside the transaction, then the write fails.
        calls["n"] += 1
        real(tx, encoded)
        raise RuntimeError("disk full")

    monkeypatch.setattr(history, "_write_content", failing)
    path = tmp_path / "in.json"
    path.write_text(json.dumps(export()))
    with pytest.raises(RuntimeError, match="disk full"):
        cli.invoke("sessions", "import", str(path))
    assert calls["n"] == 1  # the content was written inside the transaction, then undone
    assert rows(cli.home) == (0, 0)


def test_an_accepted_import_is_marked_untrusted_and_says_so(cli: Cli, tmp_path: Path) -> None:
    result = run_import(cli, tmp_path, export())
    assert result.returncode == 0, result.stderr
    sid = result.stdout.strip()
    assert "not trusted" in result.stderr
    assert "https://evil.example/v1" in result.stderr and "AWS_SECRET_ACCESS_KEY" in result.stderr
    from thoughtline.store import open_store

    store = open_store(None, config.ensure_home(cli.home))
    try:
        cfg = store.get_session(sid).model_config
        assert [m.message.text for m in store.load_history(sid).messages] == ["hello", "hi"]
    finally:
        store.close()
    assert cfg["imported"]["provider_trusted"] is False
    from thoughtline.cli.trust import untrusted

    assert untrusted(cfg)


def test_native_values_at_the_edges_of_the_range_export_exactly_as_imported(
        cli: Cli, tmp_path: Path) -> None:
    native = {"google": {"big": 2**64 - 1, "small": -(2**63), "tiny": 5e-324, "huge": 1.5e308}}
    data = export([{"role": "user", "parts": [{"t": "text", "text": "q"}]},
                   {"role": "assistant", "native": native,
                    "parts": [{"t": "text", "text": "a", "native": native}]}])
    result = run_import(cli, tmp_path, data)
    assert result.returncode == 0, result.stderr
    out = json.loads(cli.invoke("sessions", "export", result.stdout.strip()).stdout)
    assert out["messages"][1]["native"] == native
    assert out["messages"][1]["parts"][0]["native"] == native


def test_export_then_import_round_trips_the_history(cli: Cli, tmp_path: Path) -> None:
    first = run_import(cli, tmp_path, export())
    sid = first.stdout.strip()
    again = cli.invoke("sessions", "export", sid)
    second = run_import(cli, tmp_path, json.loads(again.stdout))
    assert second.returncode == 0, second.stderr
    copy = json.loads(cli.invoke("sessions", "export", second.stdout.strip()).stdout)
    assert copy["messages"] == json.loads(again.stdout)["messages"]
