"""``InteractionsEmulator``: a loopback Gemini Interactions service for offline tests.

Owns the HTTP layer: the AI Studio path ``/v1beta/interactions`` (``x-goog-api-key``) and the
Vertex path ``/v1beta1/projects/{p}/locations/{l}/interactions`` (a bearer token; google-genai
3.6.1 ``tests/interactions/test_auth.py``), server-side state (every interaction stored unless
``store: false``, continued by ``previous_interaction_id``:
ai.google.dev/gemini-api/docs/interactions), injected failures, and the record of every request.
What is refused lives in ``interactions_rules``, what is said in ``interactions_replies``; the
server lifecycle is ``loopback``'s.

    with InteractionsEmulator() as emu:
        httpx.post(f"{emu.base_url}/interactions", json={"model": "gemini-3-pro-preview", ...})
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

from thoughtline.testing import interactions_replies as replies
from thoughtline.testing.interactions_rules import check, error, steps_of
from thoughtline.testing.loopback import LoopbackServer
from thoughtline.testing.server import InjectedFailure, Received
from thoughtline.testing.signing import DEFAULT_SECRET, Signer


@dataclass(eq=False, slots=True, kw_only=True)
class InteractionsState:
    """What the running app reads and the controlling test changes."""

    signer: Signer
    require_auth: bool = True
    #: Interaction id -> every step of its chain (inputs and outputs), for stored interactions.
    stored: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    failures: deque[InjectedFailure] = field(default_factory=deque)
    count: int = 0


def _json(status: int, body: Any) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def _authorized(request: Request, vertex: bool) -> bool:
    if vertex:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and bool(token.strip())
    return bool(request.headers.get("x-goog-api-key"))


def build_app(state: InteractionsState) -> Starlette:
    """The ASGI app serving ``state``."""

    async def handle(request: Request) -> Response:
        raw = await request.body()
        response = _answer(state, request, raw, vertex="project" in request.path_params)
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        state.received.append(Received(
            path=request.url.path, headers={k.lower(): v for k, v in request.headers.items()},
            body=body, raw=raw, status=response.status_code))
        return response

    return Starlette(routes=[
        Route("/v1beta/interactions", handle, methods=["POST"]),
        Route("/v1beta1/projects/{project}/locations/{location}/interactions", handle,
              methods=["POST"]),
    ])


def _answer(state: InteractionsState, request: Request, raw: bytes, *, vertex: bool) -> Response:
    if state.failures:
        failure = state.failures.popleft()
        return _json(failure.status, failure.body)
    if state.require_auth and not _authorized(request, vertex):
        denied = error(401 if vertex else 403, "Request had invalid authentication "
                       "credentials." if vertex else "Method doesn't allow unregistered "
                       "callers. Please use API Key.",
                       "UNAUTHENTICATED" if vertex else "PERMISSION_DENIED")
        return _json(denied.status, denied.body)
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _json(400, error(400, "Invalid JSON payload received.").body)
    refusal = check(body, signer=state.signer, vertex=vertex, stored=state.stored)
    if refusal is not None:
        return _json(refusal.status, refusal.body)
    state.count += 1
    n = state.count
    previous = body.get("previous_interaction_id")
    context = [*state.stored.get(previous, []), *steps_of(body)] if previous else steps_of(body)
    steps, status = replies.output_steps(body, context, n, state.signer)
    ident = f"v1_emu{n:04d}"
    if body.get("store", True):
        state.stored[ident] = [*context, *steps]
    size = len(orjson.dumps(context))  # the model reads the whole chain, not only the input
    if not body.get("stream"):
        return _json(200, replies.whole(ident, body["model"], steps, status, body, size))
    pieces = replies.sse(replies.events(ident, steps, status, size))
    return StreamingResponse(_iterate(pieces), media_type="text/event-stream")


async def _iterate(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


class InteractionsEmulator:
    """A loopback Interactions service; ``vertex_base_url`` serves it behind the Vertex path.
    Instances sharing a ``secret`` accept each other's signatures (a restart keeps verifying),
    but a restart forgets the stored interactions (as an expired retention would)."""

    def __init__(self, *, port: int = 0, require_auth: bool = True,
                 secret: bytes = DEFAULT_SECRET) -> None:
        self._state = InteractionsState(signer=Signer(secret), require_auth=require_auth)
        self._server = LoopbackServer(build_app(self._state), port=port,
                                      name="interactions-emulator")

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1beta`` (AI Studio shape)."""
        return f"{self._server.origin}/v1beta"

    def vertex_base_url(self, project: str = "test-project", location: str = "global") -> str:
        return f"{self._server.origin}/v1beta1/projects/{project}/locations/{location}"

    @property
    def received(self) -> list[Received]:
        """Every request so far, oldest first, rejected ones included (a live list)."""
        return self._state.received

    @property
    def stored(self) -> Mapping[str, list[Mapping[str, Any]]]:
        return self._state.stored

    def forget(self) -> None:
        """Drop every stored interaction (retention ran out)."""
        self._state.stored.clear()

    def fail_next(self, status: int, body: Any) -> None:
        """Answer the next request with ``status`` and ``body`` (still recorded)."""
        self._state.failures.append(InjectedFailure(status=status, body=body, headers={}))

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
