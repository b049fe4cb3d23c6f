"""A WebSocket handshake to the gateway is a 404 naming ``websocket_unsupported``, on any path.

Codex with ``supports_websockets = true`` opens ``/v1/responses`` as a WebSocket and falls back to
HTTPS on a 404 (openai/codex config docs); Starlette alone closes the handshake, a bare 403. Driven
by the ``websockets`` client against a gateway served by uvicorn, with and without a WebSocket
library on the server side, then the fallback: the same gateway answering an HTTPS POST.
"""

from __future__ import annotations

import functools
import types
from pathlib import Path

import orjson
import pytest
import uvicorn
from gateway_support import MODEL, running_gateway
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from thoughtline.testing import ChatEmulator, loopback


def _refused(origin: str, path: str) -> tuple[int, bytes]:
    """The status and body a handshake to ``path`` gets (it must not open)."""
    with pytest.raises(InvalidStatus) as caught, connect(
            "ws" + origin.removeprefix("http") + path, open_timeout=10,
            additional_headers={"Authorization": "Bearer none"}):
        pass
    response = caught.value.response
    return response.status_code, bytes(response.body)


@pytest.mark.parametrize("path", ["/v1/responses", "/responses", "/v1/chat/completions",
                                  "/healthz", "/nowhere"])
def test_a_handshake_on_any_path_is_a_404(deepseek: ChatEmulator, tmp_path: Path,
                                          path: str) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        status, body = _refused(gw.server.origin, path)
    assert status == 404, body
    error = orjson.loads(body)["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "websocket_unsupported")
    assert "HTTPS only" in error["message"]
    assert not deepseek.received


def test_after_the_404_an_https_post_to_the_same_gateway_answers(deepseek: ChatEmulator,
                                                                  tmp_path: Path) -> None:
    """Codex's fallback: the handshake refused, then the same request as an HTTPS POST."""
    log = tmp_path / "access.log"
    with running_gateway(deepseek, tmp_path, access_log=str(log)) as gw:
        status, body = _refused(gw.server.origin, "/v1/responses")
        answer = gw.client().responses.create(model=MODEL, input="Say hi.")
    assert status == 404, body
    assert orjson.loads(body)["error"]["code"] == "websocket_unsupported"
    assert answer.status == "completed" and answer.output_text
    assert [r.status for r in deepseek.received] == [200]
    lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    refusal = [line for line in lines if line.get("websocket")]
    assert [(r["path"], r["status"], r["outcome"]) for r in refusal] == [
        ("/v1/responses", 404, "refused")]


def test_a_server_without_a_websocket_library_refuses_it_the_same(
        deepseek: ChatEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """uvicorn without websockets or wsproto (neither is a dependency) hands the handshake on
    as a plain GET asking to upgrade; Starlette alone would answer /v1/responses 405."""
    plain = types.SimpleNamespace(Config=functools.partial(uvicorn.Config, ws="none"),
                                  Server=uvicorn.Server)
    monkeypatch.setattr(loopback, "uvicorn", plain)
    with running_gateway(deepseek, tmp_path) as gw:
        status, body = _refused(gw.server.origin, "/v1/responses")
        answer = gw.client().responses.create(model=MODEL, input="Say hi.")
    assert status == 404, body
    assert orjson.loads(body)["error"]["code"] == "websocket_unsupported"
    assert answer.status == "completed"
