"""The chat emulator's HTTP layer: a Starlette app speaking OpenAI Chat Completions.

Owns routing (``POST /v1/chat/completions``, ``GET /v1/models``), bearer-token checking, injected
failures, stream pacing and cutting, SSE framing, and the record of every request received. Does not
own provider behaviour: it asks ``rejections`` whether to refuse, ``script`` what to say and
``replies`` how to shape it. Runs inside whatever server ``chat_emulator`` starts.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from thoughtline.testing.personalities import Personality
from thoughtline.testing.rejections import check_request
from thoughtline.testing.replies import Comment, build_reply, completion_body, stream_events
from thoughtline.testing.script import plan_turn
from thoughtline.testing.signing import Signer


@dataclass(frozen=True, slots=True, kw_only=True)
class Received:
    """One request as the emulator saw it, and the status it answered with."""

    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or None when the body was empty or not JSON
    raw: bytes
    status: int


@dataclass(frozen=True, slots=True, kw_only=True)
class InjectedFailure:
    """A response returned instead of normal handling (see ``ChatEmulator.fail_next``)."""

    status: int
    body: Any
    headers: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamCut:
    """Stop the next stream after ``after`` data chunks, never sending ``[DONE]``."""

    after: int
    graceful: bool  # end the body cleanly instead of dropping the connection


class StreamCutError(Exception):
    """Raised inside a stream so the server drops the connection mid-body."""


class QuietStreamCuts(logging.Filter):
    """Hides the server's traceback for connections dropped on purpose by a ``StreamCut``."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        for _ in range(8):  # follow groups and causes a few levels deep
            if error is None:
                break
            if isinstance(error, StreamCutError):
                return False
            nested = getattr(error, "exceptions", None)
            error = nested[0] if nested else (error.__cause__ or error.__context__)
        return True


@dataclass(eq=False, slots=True, kw_only=True)
class EmulatorState:
    """Everything a running app reads and the controlling test mutates."""

    personality: Personality
    signer: Signer
    require_auth: bool
    received: list[Received] = field(default_factory=list)
    failures: deque[InjectedFailure] = field(default_factory=deque)
    cuts: deque[StreamCut] = field(default_factory=deque)
    chunk_delay: float = 0.0
    #: Streamed data chunks sent so far (a test waits for this event instead of sleeping).
    chunks_sent: int = 0


def _json(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        orjson.dumps(body), status_code=status, media_type="application/json", headers=headers
    )


def _parse(raw: bytes) -> Any:
    try:
        return orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return None


def _has_bearer(headers: Mapping[str, str]) -> bool:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(token.strip())


_UNAUTHORIZED = {
    "error": {
        "message": "Missing bearer token in the Authorization header.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
}


async def _sse(
    events: list[dict[str, Any] | Comment], cut: StreamCut | None, state: EmulatorState
) -> AsyncIterator[bytes]:
    sent = 0
    for event in events:
        if cut is not None and sent >= cut.after:
            break
        if isinstance(event, Comment):
            yield f": {event.text}\n\n".encode()
            continue
        if state.chunk_delay > 0:
            await asyncio.sleep(state.chunk_delay)
        yield b"data: " + orjson.dumps(event) + b"\n\n"
        sent += 1
        state.chunks_sent += 1
    if cut is None:
        yield b"data: [DONE]\n\n"
    elif not cut.graceful:
        raise StreamCutError(f"stream cut after {cut.after} chunks")


def build_app(state: EmulatorState) -> Starlette:
    """The ASGI app serving ``state``'s personality."""

    def record(request: Request, raw: bytes, body: Any, response: Response) -> Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        state.received.append(
            Received(
                path=request.url.path,
                headers=headers,
                body=body,
                raw=raw,
                status=response.status_code,
            )
        )
        return response

    async def chat(request: Request) -> Response:
        raw = await request.body()
        body = _parse(raw)
        return record(request, raw, body, _answer(state, request, raw, body))

    async def models(request: Request) -> Response:
        if state.require_auth and not _has_bearer(request.headers):
            return record(request, b"", None, _json(401, _UNAUTHORIZED))
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": state.personality.name}
            for m in state.personality.models
        ]
        return record(request, b"", None, _json(200, {"object": "list", "data": data}))

    routes = [
        Route(path, chat, methods=["POST"])
        for path in ("/v1/chat/completions", "/chat/completions")
    ] + [Route(path, models, methods=["GET"]) for path in ("/v1/models", "/models")]
    return Starlette(routes=routes)


def _answer(state: EmulatorState, request: Request, raw: bytes, body: Any) -> Response:
    if state.failures:
        failure = state.failures.popleft()
        return _json(failure.status, failure.body, failure.headers)
    if state.require_auth and not _has_bearer(request.headers):
        return _json(401, _UNAUTHORIZED)
    if not isinstance(body, dict):
        error = {
            "message": "The request body is not a JSON object.",
            "type": "invalid_request_error",
        }
        return _json(400, {"error": error})
    rejection = check_request(state.personality, body, state.signer)
    if rejection is not None:
        return _json(rejection.status, rejection.body)
    model = body.get("model")
    model = model if isinstance(model, str) and model else state.personality.models[0]
    plan = plan_turn(body, call_id_style=state.personality.call_id_style)
    reply = build_reply(state.personality, model, plan, state.signer)
    if body.get("stream") is not True:
        return _json(200, completion_body(reply, model, plan, len(raw)))
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    events = stream_events(reply, model, plan, prompt_bytes=len(raw), include_usage=include_usage)
    cut = state.cuts.popleft() if state.cuts else None
    return StreamingResponse(
        _sse(events, cut, state),
        media_type="text/event-stream",
        headers={"cache-control": "no-cache"},
    )
