"""An in-process gateway (Chat face, real HTTP on loopback) whose upstream answers with a canned
reply, for the malformed-reply and client-body tests: what the client got and what was stored.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from reply_support import CannedTransport

from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import parse
from thoughtline.store import SQLiteStore
from thoughtline.testing.loopback import LoopbackServer

MODEL = "ds/deepseek-v4-pro"
CONFIG = ('[[upstream]]\nname = "ds"\nprovider = "deepseek"\n'
          'base_url = "http://127.0.0.1:9/v1"\nmodels = ["deepseek-v4-pro"]\n')


@dataclass
class CannedGateway:
    url: str
    store: SQLiteStore
    transport: CannedTransport
    http: httpx.Client

    def post(self, body: bytes) -> httpx.Response:
        return self.http.post(self.url, content=body,
                              headers={"content-type": "application/json"})

    def stored_answers(self) -> int:
        return sum(1 for s in self.store.list_sessions()
                   for m in self.store.load_history(s.id).messages
                   if m.message.role == "assistant")


@contextmanager
def canned_gateway(tmp: Path, reply: Any, events: Any = None) -> Iterator[CannedGateway]:
    store = SQLiteStore(tmp / "state.db")
    transport = CannedTransport(reply, events)
    gateway = Gateway(parse(tomllib.loads(CONFIG)), store, environ={}, transport=transport)
    server = LoopbackServer(create_app(gateway), name="gateway").start()
    try:
        with httpx.Client(timeout=30) as http:
            yield CannedGateway(url=server.origin + "/v1/chat/completions", store=store,
                                transport=transport, http=http)
    finally:
        server.stop()
        store.close()


def sse_data(text: str) -> list[str]:
    return [line[6:] for line in text.splitlines() if line.startswith("data: ")]
