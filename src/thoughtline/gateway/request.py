"""The HTTP pieces of one gateway request, the same for every face and route: the error a
request ends in (``HttpError``, in the face's error shape), what its access-log line says as it
goes (``Record``), reading a bounded body and parsing it into a face's ``ClientRequest``, and the
401/503 answers. No routing and no wire logic: ``app`` uses these.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson
from starlette.requests import Request
from starlette.responses import Response

from thoughtline.codecs import shape
from thoughtline.codecs.face import ClientRequest, ClientRequestError, ItemMemo
from thoughtline.errors import StoreError
from thoughtline.gateway.faces import CHAT, Face
from thoughtline.gateway.hints import Hints
from thoughtline.gateway.memo import ItemsMemo


class TooLarge(Exception):
    pass


class HttpError(Exception):
    """A request that ends in an OpenAI error object with ``status``."""

    def __init__(self, status: int, message: str, *, kind: str = "invalid_request_error",
                 code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.code, self.param = status, kind, code, param
        #: The access log's outcome: "refused" (the gateway turned the request down) unless
        #: the turn was under way ("error": an upstream or store failure).
        self.outcome = "refused"

    def response(self, face: Face = CHAT, headers: Mapping[str, str] | None = None) -> Response:
        body = face.error_json(self.status, str(self), kind=self.kind, code=self.code,
                               param=self.param)
        return json_response(self.status, body, headers)

    def frame(self, face: Face) -> bytes:
        return face.error_frame(self.status, str(self), kind=self.kind, code=self.code)


def json_response(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json",
                    headers=dict(headers or {}))


@dataclass(kw_only=True, slots=True)
class Record:
    """What the access log says about one request (filled in as it goes)."""

    started: float = field(default_factory=time.monotonic)
    fields: dict[str, Any] = field(default_factory=dict)
    #: Monotonic times the metrics read ("upstream": sent, "first_byte": its first event).
    marks: dict[str, float] = field(default_factory=dict)
    #: The face counted in flight ("": none).
    in_flight: str = ""
    #: The answer's gateway hint headers (none until the upstream is known).
    hints: Hints = field(default_factory=Hints)
    #: The request's span (None: tracing is off).
    span: object | None = None
    #: Seconds spent waiting on the upstream so far (the transport's ``on_upstream``).
    upstream_s: float = 0.0

    def waited(self, seconds: float) -> None:
        self.upstream_s += seconds

    def overhead_ms(self) -> float:
        """The gateway's own time so far: since the request arrived, less the upstream's."""
        return round((time.monotonic() - self.started - self.upstream_s) * 1000, 2)

    def line(self, status: int, outcome: str | None = None) -> dict[str, Any]:
        """``outcome`` defaults to what ``status`` says: "ok" below 400, "refused" from 400."""
        outcome = outcome or ("ok" if status < 400 else "refused")
        return {**self.fields, "status": status, "outcome": outcome,
                "duration_ms": round((time.monotonic() - self.started) * 1000, 2)}


def client_request(raw: bytes, face: Face = CHAT, headers: Mapping[str, str] | None = None,
                   memo: ItemMemo | None = None) -> ClientRequest:
    """``raw`` parsed by ``face`` (``memo``: its items' conversion resumed, ``gateway.memo``)."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise HttpError(400, f"the request body is not valid JSON: {exc}",
                        code="invalid_json") from None
    if _too_deep(body, raw, face, memo):
        raise HttpError(400, shape.too_deep("the request body"), code="too_deep")
    try:
        return face.parse(body, headers or {}, memo)
    except ClientRequestError as exc:
        raise HttpError(400, str(exc), param=exc.param) from None


def _too_deep(body: Any, raw: bytes, face: Face, memo: ItemMemo | None) -> bool:
    """Whether ``body`` nests deeper than the bound. With the items memo, the conversation
    items an earlier request of the tenant sent are left out: they were checked then
    (``ItemsMemo.seen``); the rest of the body and every item after them are walked."""
    items = face.items(body) if isinstance(memo, ItemsMemo) else None
    if items is None or not isinstance(memo, ItemsMemo):
        return shape.deeper_than(body, raw=raw)
    try:
        fresh = items[memo.seen(items):]
    except orjson.JSONEncodeError:  # (an item nested past the 255 levels orjson writes)
        return True
    # the items are a top-level array of the body: each item one level further down
    return shape.deeper_than(body, raw=raw, skip=items) or \
        shape.deeper_than(fresh, shape.MAX_DEPTH - 1)


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def closed(events: Any) -> None:
    with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
        await events.aclose()


def store_down(exc: StoreError) -> HttpError:
    error = HttpError(503, f"the gateway's store is unavailable: {exc}", kind="server_error")
    error.outcome = "error"  # a store failure, not a request turned down
    return error


def unauthorized_error() -> HttpError:
    return HttpError(401, "missing or invalid bearer token: send 'Authorization: Bearer <token>' "
                          "(or 'x-api-key: <token>') with a token configured for this gateway",
                     code="invalid_api_key")


def unauthorized(face: Face) -> Response:
    return unauthorized_error().response(face, {"www-authenticate": "Bearer"})
