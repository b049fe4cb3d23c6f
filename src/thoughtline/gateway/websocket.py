"""What the gateway answers a WebSocket handshake: an HTTP 404 with an OpenAI error object
(code ``websocket_unsupported``), on every path.

Codex with ``supports_websockets = true`` opens ``/v1/responses`` as a WebSocket and falls back to
HTTPS when the handshake is answered 404 (openai/codex config docs, unverified); the gateway serves
the Responses API over HTTPS only, so the 404 makes that fallback clean. Starlette's router would
close the handshake instead, which a client sees as a bare 403.

Owns the refusal and its access-log line; not WebSocket mode (nothing is ever accepted). Under
uvicorn with a WebSocket library the handshake is a ``websocket`` scope, refused through the
ASGI denial-response extension; without one uvicorn passes it on as a plain ``GET`` asking
``Upgrade: websocket``, refused with the same response.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from starlette.responses import Response
from starlette.websockets import WebSocket

from thoughtline.gateway.accesslog import AccessLog
from thoughtline.gateway.faces import RESPONSES

CODE = "websocket_unsupported"
MESSAGE = ("this gateway serves the Responses API over HTTPS only: WebSocket mode is not "
           "supported; send the same request as an HTTPS POST")
_KIND = "invalid_request_error"


def is_handshake(scope: Any) -> bool:
    """A WebSocket handshake, as a ``websocket`` scope or as an HTTP request asking to upgrade."""
    if scope["type"] == "websocket":
        return True
    return scope["type"] == "http" and any(
        name == b"upgrade" and value.lower() == b"websocket" for name, value in scope["headers"])


def refusal() -> Response:
    body = RESPONSES.error_json(404, MESSAGE, kind=_KIND, code=CODE, param=None)
    return Response(orjson.dumps(body), status_code=404, media_type="application/json")


async def refuse(scope: Any, receive: Any, send: Any, access: AccessLog | None) -> None:
    """Answer the handshake ``scope`` with the 404, and say so in ``access``."""
    started = time.monotonic()
    status = 404
    if scope["type"] == "http":
        await refusal()(scope, receive, send)
    elif "websocket.http.response" in scope.get("extensions", {}):
        await WebSocket(scope, receive, send).send_denial_response(refusal())
    else:  # a server without the extension can only close it (seen as a 403)
        await WebSocket(scope, receive, send).close(code=1008, reason=CODE)
        status = 403
    if access is not None:
        access.write({"method": "GET", "path": scope["path"], "websocket": True,
                      "status": status, "outcome": "refused", "error": _KIND,
                      "duration_ms": round((time.monotonic() - started) * 1000, 2)})
