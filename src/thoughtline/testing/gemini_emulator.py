"""``GeminiEmulator``: a loopback Gemini ``generateContent`` service for offline tests.

Owns the HTTP layer of the Gemini personality: the AI Studio paths
(``/v1beta/models/{model}:generateContent`` and ``:streamGenerateContent`` with or without
``alt=sse``) and the Vertex path shape (``/v1/projects/{p}/locations/{l}/publishers/google/models/
{model}:…``), key checking (``x-goog-api-key`` on AI Studio, a bearer token on Vertex), injected
failures, and the record of every request received. What is refused lives in ``gemini_rules``,
what is said and how it is framed in ``gemini_replies``; the server lifecycle is ``loopback``'s.

    with GeminiEmulator() as emu:
        httpx.post(f"{emu.base_url}/models/gemini-3-pro-preview:generateContent", ...)
        emu.received[-1].body
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from thoughtline.testing.gemini_replies import (
    json_array_bytes,
    plan_reply,
    sse_bytes,
    stream_chunks,
    whole_body,
)
from thoughtline.testing.gemini_rules import (
    Checked,
    Refusal,
    Rules,
    check_schema,
    check_tools,
    error,
)
from thoughtline.testing.loopback import LoopbackServer
from thoughtline.testing.server import InjectedFailure, Received
from thoughtline.testing.signing import DEFAULT_SECRET, OpaqueKind, Signer

_METHODS = ("generateContent", "streamGenerateContent")


@dataclass(eq=False, slots=True, kw_only=True)
class GeminiState:
    """What the running app reads and the controlling test changes."""

    signer: Signer
    require_auth: bool = True
    accept_dummy: bool = True
    call_ids: bool = True
    received: list[Received] = field(default_factory=list)
    #: What each request was answered with (the body, or a stream's chunks), aligned with
    #: ``received``; None for a refused or failed request.
    answers: list[Any] = field(default_factory=list)
    checks: list[Checked] = field(default_factory=list)
    failures: deque[InjectedFailure] = field(default_factory=deque)
    cuts: deque[int] = field(default_factory=deque)  # end the next streams after N chunks


def _json(status: int, body: Any) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def _authorized(request: Request, vertex: bool) -> bool:
    if vertex:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and bool(token.strip())
    return bool(request.headers.get("x-goog-api-key") or request.query_params.get("key"))


def _unauthorized(vertex: bool) -> Refusal:
    if vertex:
        return error(401, "Request had invalid authentication credentials. Expected OAuth 2 "
                          "access token, login cookie or other valid authentication credential.",
                     "UNAUTHENTICATED")
    return error(403, "Method doesn't allow unregistered callers (callers without established "
                      "identity). Please use API Key or other form of API consumer identity to "
                      "call this API.", "PERMISSION_DENIED")


def _split(target: str) -> tuple[str, str] | None:
    model, _, method = target.rpartition(":")
    return (model, method) if model and method in _METHODS else None


def build_app(state: GeminiState) -> Starlette:
    """The ASGI app serving ``state``."""

    async def handle(request: Request) -> Response:
        raw = await request.body()
        vertex = "project" in request.path_params
        response, answer = _answer(state, request, raw, vertex)
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        state.received.append(Received(
            path=request.url.path, headers={k.lower(): v for k, v in request.headers.items()},
            body=body, raw=raw, status=response.status_code))
        state.answers.append(answer)
        return response

    vertex_path = "/{version}/projects/{project}/locations/{location}/publishers/google/models/"
    return Starlette(routes=[
        Route("/{version}/models/{target}", handle, methods=["POST"]),
        Route(vertex_path + "{target}", handle, methods=["POST"]),
    ])


def _answer(state: GeminiState, request: Request, raw: bytes,
            vertex: bool) -> tuple[Response, Any]:
    if state.failures:
        failure = state.failures.popleft()
        return Response(orjson.dumps(failure.body), status_code=failure.status,
                        media_type="application/json", headers=dict(failure.headers)), None
    split = _split(request.path_params["target"])
    if split is None:
        return _json(404, error(404, "Method not found.", "NOT_FOUND").body), None
    model, method = split
    if state.require_auth and not _authorized(request, vertex):
        denied = _unauthorized(vertex)
        return _json(denied.status, denied.body), None
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _json(400, error(400, "Invalid JSON payload received.").body), None
    checked = Checked()
    rules = Rules(signer=state.signer, model=model, vertex=vertex,
                  accept_dummy=state.accept_dummy)
    refusal = (check_schema(body) or check_tools(body.get("tools"), vertex=vertex)
               or rules.check(body["contents"], checked))
    if refusal is not None:
        return _json(refusal.status, refusal.body), None
    state.checks.append(checked)
    reply = plan_reply(body, call_ids=state.call_ids)
    if method == "generateContent":
        whole = whole_body(reply, model, state.signer, len(raw))
        return _json(200, whole), whole
    chunks = stream_chunks(reply, model, state.signer, len(raw))
    if state.cuts:  # the body ends cleanly before the provider finished (no finishReason)
        chunks = chunks[:state.cuts.popleft()]
    if request.query_params.get("alt") == "sse":
        pieces, media = sse_bytes(chunks), "text/event-stream"
    else:
        pieces, media = json_array_bytes(chunks), "application/json"
    return StreamingResponse(_iterate(pieces), media_type=media), chunks


async def _iterate(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


class GeminiEmulator:
    """A loopback Gemini service. ``vertex_base_url`` serves the same model behind the Vertex path.

    ``accept_dummy=False`` plays a route that rejects the dummy signature; ``call_ids=False``
    answers function calls without ids (as AI Studio's gemini-3-flash-preview recording does).
    Instances sharing a ``secret`` accept each other's signatures (a restart keeps verifying).
    """

    def __init__(self, *, port: int = 0, require_auth: bool = True, accept_dummy: bool = True,
                 call_ids: bool = True, secret: bytes = DEFAULT_SECRET) -> None:
        self._state = GeminiState(signer=Signer(secret), require_auth=require_auth,
                                  accept_dummy=accept_dummy, call_ids=call_ids)
        self._server = LoopbackServer(build_app(self._state), port=port, name="gemini-emulator")

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1beta`` (AI Studio shape)."""
        return f"{self._server.origin}/v1beta"

    def vertex_base_url(self, project: str = "test-project", location: str = "global") -> str:
        """The Vertex publisher-models base for ``project`` and ``location``."""
        return (f"{self._server.origin}/v1/projects/{project}/locations/{location}"
                "/publishers/google/models")

    @property
    def received(self) -> list[Received]:
        """Every request so far, oldest first, rejected ones included (a live list)."""
        return self._state.received

    @property
    def answers(self) -> list[Any]:
        """What each request was answered with (body or stream chunks; None when refused)."""
        return self._state.answers

    @property
    def checks(self) -> list[Checked]:
        """Per accepted request: the signatures verified on their parts, and any ignored."""
        return self._state.checks

    @property
    def issued(self) -> Mapping[str, OpaqueKind]:
        return self._state.signer.issued

    @property
    def accept_dummy(self) -> bool:
        return self._state.accept_dummy

    @accept_dummy.setter
    def accept_dummy(self, value: bool) -> None:
        self._state.accept_dummy = value

    def fail_next(self, status: int, body: Any) -> None:
        """Answer the next request with ``status`` and ``body`` (still recorded)."""
        self._state.failures.append(InjectedFailure(status=status, body=body, headers={}))

    def cut_stream_after(self, n: int) -> None:
        """End the next streamed answer after ``n`` chunks, before its ``finishReason``."""
        self._state.cuts.append(n)

    def start(self) -> Self:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
