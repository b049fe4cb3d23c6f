"""What a session writes: stored history is never changed by a request, and API keys never reach
``state.db``, its WAL or the request logs (files that are owner-only).

Sessions run against loopback emulators with distinctive fake keys, through retries, refusals, a
learned verdict, an interrupted stream, a branch and a resume in another process; then the raw
bytes of every file under the home are searched for the key.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from session_support import (
    CASE_BY_ID,
    provider_for,
    run,
    run_worker,
    table_rows,
    three_turn_conversation,
)

from thoughtline import (
    ProviderError,
    Session,
    StreamInterrupted,
    ThoughtlineError,
    TurnOptions,
    open_store,
)
from thoughtline.messages import dumps
from thoughtline.requestlog import RequestLog
from thoughtline.transport import HttpTransport, TransportConfig

SECRET = "SECRET123"
KEYS = {"DEEPSEEK_API_KEY": f"sk-test-{SECRET}", "OPENAI_API_KEY": f"sk-test-{SECRET}-custom",
        "OPENROUTER_API_KEY": f"sk-test-{SECRET}-openrouter"}
CONTENT_TABLES = ("messages", "payloads", "message_payloads", "session_messages")
FAST = TransportConfig(max_retries=2, backoff_base=0.001, backoff_cap=0.05)


def _files(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if p.is_file())


def _assert_no_secret(home: Path) -> list[str]:
    names = []
    for path in _files(home):
        assert SECRET.encode() not in path.read_bytes(), f"the API key reached {path}"
        names.append(path.name)
    return names


async def _activity(home: Path, pool: Any) -> tuple[str, list[str]]:
    """Turns on three routes with retries, refusals and a learned verdict; checks files while
    the store is still open (so the WAL is there too). Returns the deepseek session id."""
    store = open_store(None, home)
    transport = HttpTransport(FAST)
    log = RequestLog(home / "logs")
    try:
        deepseek = pool.get("deepseek", tag="secrets")
        ds = await three_turn_conversation(store, provider_for(CASE_BY_ID["deepseek"], deepseek),
                                           deepseek, "[secrets/deepseek]", stream=True,
                                           transport=transport, log=log)
        deepseek.fail_next(500)
        await ds.session.send("[secrets] after a server error?")
        deepseek.fail_next(400, {"error": {"message": "Invalid request: nothing in particular"}})
        with pytest.raises(ProviderError):
            await ds.session.send("[secrets] and this one is refused")
        for case_id in ("strict-custom", "openrouter-anthropic"):
            case = CASE_BY_ID[case_id]
            emu = pool.get(case.personality, auth=case.auth)
            await three_turn_conversation(store, provider_for(case, emu), emu,
                                          f"[secrets/{case_id}]", stream=False,
                                          transport=transport, log=log)
        seen = [r.headers.get("authorization") for r in deepseek.received]
        assert f"Bearer {KEYS['DEEPSEEK_API_KEY']}" in seen  # the key was really used
        return ds.session.id, _assert_no_secret(home)
    finally:
        await transport.aclose()
        store.close()


def test_api_keys_never_reach_the_store_or_the_logs(pool: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    home = tmp_path / "home"
    session_id, while_open = run(_activity(home, pool))
    assert {"state.db", "state.db-wal", "requests.jsonl"} <= set(while_open)
    (result,) = run_worker([{"home": str(home), "session": session_id, "log": True,
                             "text": "[secrets] after a restart?", "stream": True}])
    assert result["ok"], result
    _assert_no_secret(home)

    records = list(RequestLog(home / "logs").read())
    assert len(records) >= 20
    assert {r["status"] for r in records} >= {200, 400}
    assert any(r["verdicts"] for r in records)  # the strict endpoint was learned, and logged
    raw_log = (home / "logs" / "requests.jsonl").read_bytes().lower()
    assert b"bearer" not in raw_log and b"authorization" not in raw_log
    # Owner-only files (docs/configuration.md).
    for path in [home / "state.db", *(home / "logs").iterdir()]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
    assert stat.S_IMODE((home / "logs").stat().st_mode) & 0o077 == 0


async def _mutation_attempts(home: Path, pool: Any) -> None:
    case = CASE_BY_ID["openrouter-anthropic"]
    emu = pool.get(case.personality, auth=case.auth, tag="secrets")
    store = open_store(None, home)
    transport = HttpTransport(FAST)
    try:
        session = Session.resume(store, None, transport=transport)
        kept = session.history
        await session.send("[mutate] one more turn?", TurnOptions(stream=True))
        emu.cut_stream_after(12)
        with pytest.raises(StreamInterrupted):
            await session.send("[mutate] cut, keep nothing", TurnOptions(keep_partial=False))
        emu.cut_stream_after(12)
        with pytest.raises(StreamInterrupted):
            await session.send("[mutate] cut, keep the partial", TurnOptions(keep_partial=True))
        emu.fail_next(400, {"error": {"message": "Provider returned error", "code": 400}})
        with pytest.raises(ThoughtlineError):
            await session.send("[mutate] refused")
        branch = session.branch(at=8)
        await branch.send("[mutate] on a branch?", TurnOptions(stream=False))
        await session.send("[mutate] and again?", TurnOptions(stream=False))
        assert all(a is b for a, b in zip(kept, session.history, strict=False))
    finally:
        await transport.aclose()
        store.close()


def test_requests_never_change_stored_history(pool: Any, tmp_path: Path) -> None:
    case = CASE_BY_ID["openrouter-anthropic"]
    emu = pool.get(case.personality, auth=case.auth, tag="secrets")
    home = tmp_path / "home"

    async def conversation() -> str:
        store = open_store(None, home)
        transport = HttpTransport(FAST)
        try:
            done = await three_turn_conversation(store, provider_for(case, emu), emu,
                                                 "[mutate]", stream=True, transport=transport)
            return done.session.id
        finally:
            await transport.aclose()
            store.close()

    session_id = run(conversation())
    before = {table: table_rows(home, table) for table in CONTENT_TABLES}
    store = open_store(None, home)
    try:
        history = [dumps(m.message) for m in store.load_history(session_id).messages]
    finally:
        store.close()

    run(_mutation_attempts(home, pool))

    for table in CONTENT_TABLES:
        after = table_rows(home, table)
        assert before[table] <= after, f"a row of {table} changed or vanished"
        assert len(after) > len(before[table])
    store = open_store(None, home)
    try:
        loaded = store.load_history(session_id)
        assert loaded.problems == ()
        assert [dumps(m.message) for m in loaded.messages][:len(history)] == history
    finally:
        store.close()
