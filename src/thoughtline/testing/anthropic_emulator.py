"""``AnthropicEmulator``: a loopback Anthropic Messages API for offline tests and the demo.

Serves the Anthropic API (``POST /v1/messages``, key in ``x-api-key``), Foundry and Bedrock's
Messages API (``POST /anthropic/v1/messages``; an ``api-key``/bearer key, or an ``Authorization:
AWS4-HMAC-SHA256 …`` SigV4 header — present, not verified), and Vertex
(``POST /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{model}:rawPredict`` or
``:streamRawPredict``, bearer token). Every request is checked the way the real API checks it
(``anthropic_rules``: shape, version, thinking parameters per model; ``anthropic_blocks``: signed
thinking bound to its block and prefix, the model and account checks, ``drop_block``;
``anthropic_compaction``: on-demand compaction and replayed compaction blocks;
``anthropic_fallback``: server-side fallback and replayed ``fallback`` blocks), answered
by the script (``anthropic_replies``) whole or as SSE with real ``event:`` names, and recorded.

    with AnthropicEmulator() as emu:
        httpx.post(f"{emu.base_url}/v1/messages", headers={"x-api-key": "k", ...}, json=...)
        emu.received[-1].body, emu.reports[-1]
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from thoughtline.testing import anthropic_blocks as blocks
from thoughtline.testing import anthropic_compaction as compaction
from thoughtline.testing import anthropic_fallback as fallback
from thoughtline.testing import anthropic_replies as replies
from thoughtline.testing import anthropic_rules as rules
from thoughtline.testing.anthropic_rules import Rejection, error
from thoughtline.testing.loopback import LoopbackServer
from thoughtline.testing.server import (
    InjectedFailure,
    QuietStreamCuts,
    Received,
    StreamCut,
    StreamCutError,
)
from thoughtline.testing.signing import DEFAULT_SECRET

_VERTEX = "/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{rest}"


@dataclass(eq=False, slots=True, kw_only=True)
class _State:
    signer: blocks.BlockSigner
    account: str
    require_auth: bool
    received: list[Received] = field(default_factory=list)
    reports: list[list[dict[str, str]] | None] = field(default_factory=list)
    answers: list[list[dict[str, Any]]] = field(default_factory=list)
    failures: deque[InjectedFailure] = field(default_factory=deque)
    cuts: deque[StreamCut] = field(default_factory=deque)
    prompt_cache: bool = False
    window: int | None = None
    #: Refusal categories of the next requests that ask for fallback, each answered by a hop.
    declines: deque[str | None] = field(default_factory=deque)
    #: Every ``fallback`` block answered, serialized as sent (a replayed one must be one).
    fallbacks: set[bytes] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class _Call:
    platform: str  # "anthropic" | "foundry" | "bedrock" | "vertex"
    model: str
    stream: bool


def _json(status: int, body: Any) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def _platform(path: str, headers: Mapping[str, str]) -> str:
    if "/publishers/anthropic/models/" in path:
        return "vertex"
    if path.startswith("/anthropic/"):
        return "bedrock" if headers.get("authorization", "").startswith("AWS4-HMAC-SHA256") else (
            "foundry")
    return "anthropic"


def _authorized(platform: str, headers: Mapping[str, str]) -> bool:
    bearer = headers.get("authorization", "").lower().startswith("bearer ")
    if platform == "bedrock":
        return "Credential=" in headers.get("authorization", "") and bool(
            headers.get("x-amz-date"))
    if platform == "vertex":
        return bearer
    if platform == "foundry":
        return bool(headers.get("api-key")) or bearer
    return bool(headers.get("x-api-key")) or bearer


def _call(request: Request, body: Mapping[str, Any], platform: str) -> _Call:
    if platform == "vertex":
        model, _, verb = request.path_params["rest"].partition(":")
        return _Call(platform, model, verb == "streamRawPredict")
    model = given if isinstance(given := body.get("model"), str) else ""
    return _Call(platform, model, body.get("stream") is True)


def _answer(state: _State, request: Request, raw: bytes, body: Any) -> Response:
    headers = {k.lower(): v for k, v in request.headers.items()}
    platform = _platform(request.url.path, headers)
    if state.require_auth and not _authorized(platform, headers):
        return _json(401, error("invalid x-api-key", 401, "authentication_error").body)
    if not isinstance(body, dict):
        return _json(400, error("The request body is not valid JSON.").body)
    prompt = replies.prompt_usage(raw, body, cached=state.prompt_cache)
    size = sum(prompt.values())
    if state.window is not None and size > state.window:
        # The real wording (earendil-works/pi#102: a 400 invalid_request_error).
        return _refuse(state, error(f"prompt is too long: {size} tokens > {state.window} "
                                    "maximum"))
    call = _call(request, body, platform)
    found = rules.check_request(body, headers, vertex=platform == "vertex", model=call.model,
                                version_header=platform in ("anthropic", "foundry"))
    found = (found or compaction.check(body, headers, call.model)
             or compaction.check_replayed(body, state.signer, state.account)
             or fallback.check(body, headers)
             or fallback.check_replayed(body, raw, state.fallbacks)
             or blocks.missing_in_loop(body, call.model))
    if found is not None:
        return _refuse(state, found)
    thinking = body.get("thinking") if isinstance(body.get("thinking"), Mapping) else {}
    binding = thinking.get("block_binding") if isinstance(thinking, Mapping) else None
    behavior = binding.get("prefix_mismatch_behavior") if isinstance(binding, Mapping) else None
    target = blocks.Target(model=call.model, account=state.account, behavior=behavior,
                           claude_api=platform == "anthropic")
    verdict = blocks.verify(body, state.signer, target)
    if verdict.rejection is not None:
        return _refuse(state, verdict.rejection)
    # With the setting sent every response reports (recorded: "[]" when nothing was dropped).
    reports = verdict.dropped if behavior is not None or verdict.dropped else None
    state.reports.append(reports)
    if compaction.asked(body):  # on-demand compaction: one signed compaction block
        content = compaction.compact(body, call.model, state.account, state.signer)
        reply = replies.Reply(content=content, stop_reason="end_turn",
                              message_id=f"msg_emucompact{len(state.received):08d}")
    else:
        hop = None
        if state.declines and fallback.asked(body, headers):
            hop = fallback.hop(body, call.model, state.declines.popleft())
        reply = replies.build(body, call.model, state.account, state.signer, verdict.last_kept,
                              hop)
        state.fallbacks.update(orjson.dumps(b) for b in reply.content
                               if b["type"] == fallback.BLOCK)
    state.answers.append(reply.content)
    # The response names the model that answered (a fallback's, after a hop: anthropic-sdk-python
    # src/anthropic/types/beta/beta_fallback_block_param.py).
    answered = next((b["to"]["model"] for b in reversed(reply.content)
                     if b["type"] == fallback.BLOCK), call.model)
    if not call.stream:
        return _json(200, replies.whole(reply, answered, prompt, reports))
    cut = state.cuts.popleft() if state.cuts else None
    return StreamingResponse(_sse(replies.events(reply, answered, prompt, reports), cut),
                             media_type="text/event-stream", headers={"cache-control": "no-cache"})


def _refuse(state: _State, rejection: Rejection) -> Response:
    state.reports.append(None)
    return _json(rejection.status, rejection.body)


async def _sse(events: Iterator[tuple[str, Any]], cut: StreamCut | None) -> AsyncIterator[bytes]:
    for sent, (name, payload) in enumerate(events):
        if cut is not None and sent >= cut.after:
            if not cut.graceful:
                raise StreamCutError(f"stream cut after {cut.after} events")
            return
        yield f"event: {name}\ndata: ".encode() + orjson.dumps(payload) + b"\n\n"


def build_app(state: _State) -> Starlette:
    """The ASGI app serving the emulated API."""

    async def messages(request: Request) -> Response:
        raw = await request.body()
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        if state.failures:
            failure = state.failures.popleft()
            response = _json(failure.status, failure.body)
            state.reports.append(None)
        else:
            response = _answer(state, request, raw, body)
        state.received.append(Received(
            path=request.url.path, headers={k.lower(): v for k, v in request.headers.items()},
            body=body, raw=raw, status=response.status_code))
        return response

    paths = ("/v1/messages", "/anthropic/v1/messages", _VERTEX)
    return Starlette(routes=[Route(p, messages, methods=["POST"]) for p in paths])


class AnthropicEmulator:
    """A loopback Anthropic Messages API (and its Vertex, Foundry and Bedrock paths).

    Blocks are signed with ``secret`` and bound to ``account``: two emulators with different
    accounts reject (Sonnet/Haiku 5.5: drop) each other's account-bound blocks.
    """

    def __init__(self, *, account: str = "acct-emulator", require_auth: bool = True,
                 secret: bytes = DEFAULT_SECRET, port: int = 0) -> None:
        self._state = _State(signer=blocks.BlockSigner(secret), account=account,
                             require_auth=require_auth)
        self._loop = LoopbackServer(build_app(self._state), port=port, name="anthropic-emulator")

    def cache_prompts(self, on: bool = True) -> None:
        """Answer as a prompt-cached request does: all but the last message read from the
        cache, so ``input_tokens`` counts only the rest
        (docs.anthropic.com/en/docs/build-with-claude/prompt-caching: it excludes the cache reads
        and writes)."""
        self._state.prompt_cache = on

    def limit_context(self, tokens: int | None) -> None:
        """Reject a request whose prompt (bytes / 4) exceeds ``tokens`` with the real 400
        "prompt is too long: N tokens > M maximum" (None: no limit)."""
        self._state.window = tokens

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the Anthropic API (``/v1/messages``) and Vertex root."""
        return self._loop.origin

    @property
    def platform_url(self) -> str:
        """``…/anthropic``: the Foundry and Bedrock Messages API base URL."""
        return self._loop.origin + "/anthropic"

    @property
    def received(self) -> list[Received]:
        """Every request so far, oldest first, rejected ones included (a live list)."""
        return self._state.received

    @property
    def reports(self) -> list[list[dict[str, str]] | None]:
        """Per request: the ``input_transformations`` answered (None: none, or rejected)."""
        return self._state.reports

    @property
    def answers(self) -> list[list[dict[str, Any]]]:
        """The content blocks of every accepted request's answer, in order (a live list)."""
        return self._state.answers

    def decline_next(self, category: str | None = "cyber") -> None:
        """Have the requested model decline the next request that asks for server-side fallback
        (``fallbacks`` and its beta): the first fallback answers after a ``fallback`` block."""
        self._state.declines.append(category)

    def fail_next(self, status: int, body: Any) -> None:
        """Answer the next request with ``status`` and ``body`` (it is still recorded)."""
        self._state.failures.append(InjectedFailure(status=status, body=body, headers={}))

    def cut_stream_after(self, n: int, *, graceful: bool = False) -> None:
        """Stop the next stream after ``n`` events (dropping the connection unless graceful)."""
        self._state.cuts.append(StreamCut(after=n, graceful=graceful))

    def start(self) -> Self:
        import logging

        logger = logging.getLogger("uvicorn.error")
        if not any(isinstance(f, QuietStreamCuts) for f in logger.filters):
            logger.addFilter(QuietStreamCuts())
        self._loop.start()
        return self

    def stop(self) -> None:
        self._loop.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
