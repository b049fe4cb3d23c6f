"""An upstream error that echoes the API key never carries it on (seeded mutant M87, issue 47).

Providers quote the key they refused ("Incorrect API key provided: sk-…"). Outside the gateway
nothing redacts it again: the transport is the only layer between that body and the exception a
CLI prints, the request log and the store. The gateway's own tests redact at its edge as well,
so they cannot see a transport that was never told the key.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from session_support import CASE_BY_ID, provider_for, run

from thoughtline import ProviderError, Session, ThoughtlineError, TurnOptions, open_store
from thoughtline.requestlog import RequestLog
from thoughtline.testing import ChatEmulator
from thoughtline.transport import HttpTransport, TransportConfig

DEEPSEEK = CASE_BY_ID["deepseek"]
FAST = TransportConfig(max_retries=1, backoff_base=0.001, backoff_cap=0.05)


@pytest.fixture
def emu(pool: Any) -> Iterator[ChatEmulator]:
    emulator = pool.get("deepseek", tag="key-echo")
    emulator.chunk_delay = 0.0
    yield emulator


async def _refused(home: Path, emu: ChatEmulator, stream: bool) -> ThoughtlineError | None:
    store = open_store(None, home)
    transport = HttpTransport(FAST)
    try:
        session = Session.create(store, provider_for(DEEPSEEK, emu), transport=transport,
                                 log=RequestLog(home / "logs"))
        try:
            await session.send("How warm is it today?", TurnOptions(stream=stream))
        except ThoughtlineError as exc:
            return exc
        return None
    finally:
        await transport.aclose()
        store.close()


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_key_echoed_in_an_error_body_is_redacted_from_the_error_and_the_log(
        emu: ChatEmulator, tmp_path: Path, stream: bool) -> None:
    key = os.environ[provider_for(DEEPSEEK, emu).key_env]  # tests/session/conftest.py fake_keys
    assert len(key) >= 16
    message = f"Authentication Fails, Your api key: {key} is invalid"
    emu.fail_next(400, {"error": {"message": message, "type": "authentication_error",
                                  "param": None, "code": "invalid_request_error"}})
    outcome = run(_refused(tmp_path, emu, stream))
    assert isinstance(outcome, ProviderError) and outcome.status == 400
    shown = str(outcome)
    assert "Authentication Fails" in shown and "***" in shown  # the message, the key masked
    for where, text in (("message", shown), ("body", outcome.body)):
        assert key[:8] not in text, f"the key reached the error's {where}"
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert key[:8].encode() not in written  # state.db, its WAL, requests.jsonl
