"""``ResponsesEmulator``: a loopback OpenAI Responses provider for offline tests.

Serves ``POST /v1/responses`` (and ``/responses``) with a Starlette app on 127.0.0.1
(``loopback.LoopbackServer``), with the chat emulator's controls — request record, injected
failures, stream cuts, pacing (``chat_emulator``/``server``). It issues encrypted reasoning items
sealed to its issuer (``responses_sealing``), answers like the recordings
(``responses_replies``) and refuses what the real providers refuse, in their words
(``responses_rules``). Every request is recorded.

    with ResponsesEmulator("openai") as emu:
        httpx.post(f"{emu.base_url}/responses", ...)
        emu.received[-1].body
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from thoughtline.testing.chat_emulator import ChatEmulator
from thoughtline.testing.loopback import LoopbackServer
from thoughtline.testing.responses_pinned import Pinned
from thoughtline.testing.responses_replies import build_output, response_body, stream_events
from thoughtline.testing.responses_rules import Wordings, check_request
from thoughtline.testing.responses_sealing import DEFAULT_SECRET, Sealer
from thoughtline.testing.server import InjectedFailure, Received, StreamCut, StreamCutError


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponsesPersonality:
    """One emulated Responses provider: its issuer (organisation), wordings and models."""

    name: str
    issuer: str
    models: tuple[str, ...]
    wordings: Wordings = "openai"
    #: Assistant messages carry ``phase`` (gpt-5.3-codex and later:
    #: developers.openai.com/docs/guides/conversation-state?api-mode=responses).
    phase: bool = True
    #: Reasoning items carry sealed ``encrypted_content``; False: readable ``reasoning_text``
    #: only, as a relay without encryption returns them (Kimi on vLLM behind a Responses
    #: front, NousResearch/hermes-agent#91104).
    encrypted: bool = True
    #: Readable reasoning items also carry ``encrypted_content: "<response id>-<n>"``, a
    #: reference to nothing a stateless server kept, as DeepSeek's /responses does
    #: (pydantic-ai-deepseek-responses-replay-reasoning).
    reference: bool = False
    #: Takes a reasoning item back without its ``encrypted_content`` (its id not looked up):
    #: what the retry of openclaw PR #92941 relies on after ``thinking_signature_invalid``.
    #: OpenAI itself, with ``store: false``, answers such an item "Item with id 'rs_…' not
    #: found" (opencode PR #2480; openclaw PR #88917 met it after this very retry).
    bare: bool = False


RESPONSES_PERSONALITIES: Mapping[str, ResponsesPersonality] = MappingProxyType({
    "openai": ResponsesPersonality(name="openai", issuer="org-emulator",
                                   models=("gpt-5.5", "gpt-5.6")),
    "xai": ResponsesPersonality(name="xai", issuer="xai-emulator", models=("grok-4",),
                                wordings="xai", phase=False),
    "relay": ResponsesPersonality(name="relay", issuer="relay-emulator",
                                  models=("openai/gpt-5.5",), wordings="relay"),
    "readable-relay": ResponsesPersonality(name="readable-relay", issuer="vllm-emulator",
                                           models=("kimi-k3",), wordings="relay", phase=False,
                                           encrypted=False),
    # A Codex-style upstream that answers thinking_signature_invalid (kaitranntt/ccs #1402)
    # and takes the item back bare (openclaw PR #92941).
    "codex": ResponsesPersonality(name="codex", issuer="codex-emulator", models=("gpt-5.5",),
                                  bare=True),
    # DeepSeek's native /responses: stateless, readable reasoning_text, phase on messages
    # (the recording above); a tool-calling turn's reasoning_text must come back
    # (api-docs.deepseek.com/guides/thinking_mode; lidge-jun/opencodex#1594).
    "deepseek": ResponsesPersonality(name="deepseek", issuer="deepseek-emulator",
                                     models=("deepseek-v4-flash", "deepseek-v4-pro"),
                                     wordings="deepseek", encrypted=False, reference=True),
})

_UNAUTHORIZED = {"error": {"message": "Missing bearer token in the Authorization header.",
                           "type": "invalid_request_error", "param": None,
                           "code": "invalid_api_key"}}


@dataclass(eq=False, slots=True, kw_only=True)
class ResponsesState:
    """What the app reads and the controlling test changes (the chat emulator's controls)."""

    personality: ResponsesPersonality
    sealer: Sealer
    require_auth: bool
    received: list[Received] = field(default_factory=list)
    failures: deque[InjectedFailure] = field(default_factory=deque)
    cuts: deque[StreamCut] = field(default_factory=deque)
    chunk_delay: float = 0.0
    issued: list[dict[str, Any]] = field(default_factory=list)  # reasoning items, as sent
    pinned: Pinned = field(default_factory=Pinned)  # position-critical items, when on
    #: encrypted values it can no longer decrypt → whether its error quotes them
    invalid: dict[str, bool] = field(default_factory=dict)


def _json(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json",
                    headers=headers)


async def _sse(events: list[dict[str, Any]], cut: StreamCut | None,
               state: ResponsesState) -> AsyncIterator[bytes]:
    for sent, event in enumerate(events):
        if cut is not None and sent >= cut.after:
            if not cut.graceful:
                raise StreamCutError(f"stream cut after {cut.after} events")
            return
        if state.chunk_delay > 0:
            await asyncio.sleep(state.chunk_delay)
        yield f"event: {event['type']}\n".encode() + b"data: " + orjson.dumps(event) + b"\n\n"


def _answer(state: ResponsesState, request: Request, raw: bytes, body: Any) -> Response:
    if state.failures:
        failure = state.failures.popleft()
        return _json(failure.status, failure.body, failure.headers)
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if state.require_auth and not (scheme.lower() == "bearer" and token.strip()):
        return _json(401, _UNAUTHORIZED)
    if not isinstance(body, dict):
        return _json(400, {"error": {"message": "The request body is not a JSON object.",
                                     "type": "invalid_request_error", "param": None,
                                     "code": None}})
    rejection = check_request(body, sealer=state.sealer, wordings=state.personality.wordings,
                              readable=not state.personality.encrypted, invalid=state.invalid,
                              bare=state.personality.bare)
    rejection = rejection or state.pinned.check(body)
    if rejection is not None:
        return _json(rejection.status, rejection.body)
    model = body.get("model") if isinstance(body.get("model"), str) else ""
    model = model or state.personality.models[0]
    plan, output, ids = build_output(body, state.sealer, phase=state.personality.phase,
                                     encrypted=state.personality.encrypted,
                                     reference=state.personality.reference)
    output = state.pinned.add(output, state.sealer)
    state.issued.extend(i for i in output if i["type"] == "reasoning")
    response = response_body(body, model, output, ids, plan, len(raw))
    if body.get("stream") is not True:
        return _json(200, response)
    cut = state.cuts.popleft() if state.cuts else None
    return StreamingResponse(_sse(stream_events(response, state.sealer), cut, state),
                             media_type="text/event-stream",
                             headers={"cache-control": "no-cache"})


def build_responses_app(state: ResponsesState) -> Starlette:
    async def responses(request: Request) -> Response:
        raw = await request.body()
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        response = _answer(state, request, raw, body)
        state.received.append(Received(
            path=request.url.path, headers={k.lower(): v for k, v in request.headers.items()},
            body=body, raw=raw, status=response.status_code))
        return response

    return Starlette(routes=[Route(path, responses, methods=["POST"])
                             for path in ("/v1/responses", "/responses")])


class ResponsesEmulator(ChatEmulator):
    """A loopback Responses server playing one personality (``RESPONSES_PERSONALITIES``).

    It keeps the chat emulator's controls (``received``, ``fail_next``, ``cut_stream_after``,
    ``chunk_delay``, ``start``/``stop``) by subclassing it with its own state and app.

    Items are sealed to ``issuer`` (default: the personality's) under ``secret``: instances with
    the same issuer and secret accept each other's items — a restarted emulator still does —
    and an instance with another issuer rejects them as another organisation's.
    """

    def __init__(self, personality: str | ResponsesPersonality = "openai", *, port: int = 0,
                 require_auth: bool = True, issuer: str | None = None,
                 secret: bytes = DEFAULT_SECRET) -> None:
        if isinstance(personality, str):
            if personality not in RESPONSES_PERSONALITIES:
                known = ", ".join(sorted(RESPONSES_PERSONALITIES))
                raise ValueError(f"unknown personality {personality!r} (known: {known})")
            personality = RESPONSES_PERSONALITIES[personality]
        state = ResponsesState(personality=personality,
                               sealer=Sealer(issuer or personality.issuer, secret),
                               require_auth=require_auth)
        self._state = state  # type: ignore[assignment]
        self._loop = LoopbackServer(build_responses_app(state), port=port,
                                    name="responses-emulator")
        self._port = None

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None else "stopped"
        return f"ResponsesEmulator({self._state.personality.name!r}, {where})"

    @property
    def issued(self) -> tuple[str, ...]:  # type: ignore[override]
        """Every encrypted_content this instance issued (the ``output_item.done`` values)."""
        return tuple(i["encrypted_content"] for i in self._state.issued  # type: ignore[attr-defined]
                     if "encrypted_content" in i)

    @property
    def issued_items(self) -> tuple[dict[str, Any], ...]:
        """Every reasoning item this instance issued, exactly as its answer carried it (the
        ``output_item.done`` form when streamed), oldest first."""
        return tuple(self._state.issued)  # type: ignore[attr-defined]

    def invalidate(self, value: str, *, named: bool = True) -> None:
        """From now on answer ``thinking_signature_invalid`` to any request that replays
        ``value`` (as after a key rotation: the value is well formed, it no longer decrypts).
        ``named``: the error quotes the value by its ends, as seen in the wild; else it gives
        only the reason, naming nothing (``responses_rules._signature_invalid``)."""
        self._state.invalid[value] = named  # type: ignore[attr-defined]

    def pin_items(self, on: bool = True) -> None:
        """Answer with position-critical items too (``responses_pinned``): a
        ``configuration_update`` and a ``program`` item, checked when they come back."""
        self._state.pinned.on = on  # type: ignore[attr-defined]

    @property
    def pinned_issued(self) -> dict[str, tuple[bytes, tuple[str, ...]]]:
        """Each position-critical item issued: its bytes (sorted keys) and its answer's ids."""
        return dict(self._state.pinned.issued)  # type: ignore[attr-defined]

    @property
    def sealer(self) -> Sealer:
        return self._state.sealer  # type: ignore[attr-defined]
