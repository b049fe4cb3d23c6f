"""A gateway on PostgreSQL whose write's ``COMMIT`` reached the server but whose answer was lost
(the connection broke) stores the turn once and answers it (issue 23, item 6): the outcome is read
back, the write is never made a second time."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest
from gateway_support import MODEL, SESSION_HEADER, gateway_toml

from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import parse
from thoughtline.requestlog import RequestLog
from thoughtline.store.postgres import PostgresStore
from thoughtline.testing import ChatEmulator
from thoughtline.testing.loopback import LoopbackServer


def _post(base_url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(base_url + "/chat/completions", content=orjson.dumps(body), timeout=60,
                      headers={"content-type": "application/json"})


@pytest.mark.parametrize("stream", [False, True])
def test_a_commit_whose_reply_was_lost_stores_the_turn_once(
        pg_store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        stream: bool) -> None:
    with ChatEmulator("deepseek") as emu:
        store = PostgresStore(pg_store_url)
        gateway = Gateway(parse(tomllib.loads(gateway_toml(emu))), store, environ={},
                          request_log=RequestLog(tmp_path / "logs"))
        server = LoopbackServer(create_app(gateway), name="gateway").start()
        try:
            messages: list[dict[str, Any]] = [{"role": "user", "content": "Hello"}]
            first = _post(server.origin + "/v1", {"model": MODEL, "messages": messages})
            assert first.status_code == 200, first.text
            session = first.headers[SESSION_HEADER]
            messages += [{"role": "assistant",
                          "content": first.json()["choices"][0]["message"]["content"]},
                         {"role": "user", "content": "And then?"}]
            real = psycopg.Connection.commit
            cut: list[int] = []

            def commit_then_lose_the_reply(self: psycopg.Connection[Any]) -> None:
                real(self)
                if not self.read_only and not cut:
                    cut.append(1)
                    raise psycopg.OperationalError("server closed the connection unexpectedly")

            monkeypatch.setattr(psycopg.Connection, "commit", commit_then_lose_the_reply)
            answer = _post(server.origin + "/v1",
                           {"model": MODEL, "messages": messages, "stream": stream})
            monkeypatch.undo()
            stored = [m.message.role for m in store.load_history(session).messages]
        finally:
            server.stop()
            store.close()
    assert cut == [1]
    assert answer.status_code == 200, answer.text
    assert b'"error"' not in answer.content
    assert stored == ["user", "assistant", "user", "assistant"]  # once, as answered
