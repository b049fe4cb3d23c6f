"""A second API that exists only in the tests: proof that a new API is one codec plus route data
plus an emulator, with no edit to ``session.py``, ``replay.py`` or ``transport/``.

The "stub" API (invented for this test, not a real provider): ``POST {base}/turn`` takes
``{"model", "turns": [{"role", "text", "sealed"?}]}``; the reply is ``{"text", "sealed"}`` where
``sealed`` is an HMAC over the text (an opaque value that must come back verbatim on the next
request); streams are SSE with named events (``event: piece`` / ``event: seal`` / ``event: end``).
The emulator rejects a request whose sealed value was altered with a 400 naming its index; the
codec fingerprints that value and the core retries once without it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route as HttpRoute

from thoughtline.codecs.base import CodecBase, Encoded, Endpoint, Lesson, Profile, RequestSpec, Walk
from thoughtline.codecs.flat import NOTHING, Counts, FlatTurns
from thoughtline.config import ProviderConfig
from thoughtline.events import Done, Event, ReasoningDelta, TextDelta
from thoughtline.messages import Message, Origin, Reasoning, Text, Usage, fingerprint
from thoughtline.replay import ReplayPlan
from thoughtline.routes.resolve import Route, parse_api_table
from thoughtline.testing.loopback import LoopbackServer

API = "stub"
SECRET = b"stub-emulator-secret"
TABLE = parse_api_table(API, {"row": [
    {"id": "stub-any", "catch_all": True, "explain": "the test-only stub API",
     "profile": {"replay_sealed": True}},
]})


def seal(text: str) -> str:
    return hmac.new(SECRET, text.encode(), hashlib.sha256).hexdigest()


# --- the codec ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class StubProfile(Profile):
    replay_sealed: bool = True

    def narrowed(self, verdicts: Sequence[Any]) -> StubProfile:
        return self

    def accepts(self, origin: Origin, target: Origin) -> bool:
        return origin.api == API and origin.host == target.host

    def public_json(self) -> dict[str, Any]:
        return {"replay_sealed": self.replay_sealed}

    def describe(self) -> list[str]:
        return ["sealed values go back verbatim"]


def _turn(message: Message, plan: ReplayPlan) -> list[dict[str, Any]]:
    """A turn's one element of the ``turns`` array (its sealed value where it may go back)."""
    turn: dict[str, Any] = {"role": message.role, "text": message.text}
    for part in message.reasoning:
        if (part.signature and part.complete and plan.may_replay(part.origin)
                and not plan.rejected(fingerprint("sealed", part.signature))):
            turn["sealed"] = part.signature
    return [turn]


class StubTurns(FlatTurns):
    """The stub API's turn encoder, as a new API's would be: its request is one flat array of
    per-turn elements (``codecs.flat``), so the core stores and splices each turn's bytes."""

    def __init__(self) -> None:
        super().__init__(version="stub-1", items=_turn, count=lambda items: NOTHING)

    def assemble(self, walk: Walk[None, Counts], spec: RequestSpec,
                 plan: ReplayPlan) -> Encoded:
        body: dict[str, Any] = {"model": spec.model, "turns": list(walk.fragments)}
        if spec.stream:
            body["stream"] = True
        return Encoded(raw=orjson.dumps(body))


class StubFold:
    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.saw_chunk = False
        self._text: list[str] = []
        self._sealed: str | None = None
        self._ended = False

    @property
    def finished(self) -> bool:
        return self._ended

    def add_event(self, event_type: str, payload: Any) -> list[Event]:
        self.saw_chunk = True
        if event_type == "piece":
            self._text.append(payload["text"])
            return [TextDelta(payload["text"])]
        if event_type == "seal":
            self._sealed = payload["sealed"]
            return [ReasoningDelta("(sealed)")]
        if event_type == "end":
            self._ended = True
        return []

    def finish(self, *, complete: bool = True) -> Done:
        return Done(message=_message("".join(self._text), self._sealed, self.origin, complete),
                    usage=Usage(), finish_reason="end" if self._ended else None,
                    finish="stop" if self._ended else None)


def _message(text: str, sealed: str | None, origin: Origin, complete: bool = True) -> Message:
    parts: list[Any] = []
    if sealed:
        parts.append(Reasoning(kind="signed", signature=sealed, origin=origin,
                               complete=complete))
    parts.append(Text(text=text))
    return Message(role="assistant", parts=tuple(parts), origin=origin,
                   incomplete=not complete)


class StubCodec(CodecBase):
    """A turn-by-turn codec (``StubTurns``): the core's wire cache encodes, stores and splices
    its turns; every optional hook keeps its no-op default (``CodecBase``)."""

    api = API
    owned = frozenset({"model", "turns"})
    turns = StubTurns()

    def resolve(self, provider: str, base_url: str | None, model: str) -> Route:
        from thoughtline.routes.resolve import hostname_of

        row = TABLE.match(provider, base_url)
        return Route(row=row.id, api=API, provider=provider.lower(), host=hostname_of(base_url),
                     model=model, profile=StubProfile(**row.profile), explain=row.explain)

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        return Done(message=_message(body["text"], body.get("sealed"), origin), usage=Usage(),
                    finish_reason="end", finish="stop")

    def new_fold(self, origin: Origin, *, seed: str = "") -> StubFold:
        return StubFold(origin)

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint:
        return Endpoint(url=provider.base_url.rstrip("/") + "/turn",
                        framing="sse" if stream else "json", headers={"stub-version": "1"})

    def auth_scheme(self, provider: ProviderConfig) -> str:
        return provider.auth or "x-api-key"

    def summary(self, encoded: Encoded) -> dict[str, Any]:
        return {"sealed": sum(1 for t in encoded.body["turns"] if "sealed" in t)}

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        error = orjson.loads(body).get("error", {})
        if error.get("code") != "bad_seal":
            return None
        sealed = encoded.body["turns"][error["turn"]].get("sealed")
        if sealed is None:
            return None
        return Lesson(notice=f"turn {error['turn']}'s sealed value was rejected — retrying "
                             "without it", fingerprints=frozenset({fingerprint("sealed", sealed)}))


CODEC = StubCodec()


# --- the emulator -------------------------------------------------------------------------------


@dataclass(eq=False, kw_only=True)
class StubEmulator:
    """Replies "reply N"; rejects altered seals; records every request body and its headers."""

    received: list[tuple[dict[str, str], Any]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    _server: LoopbackServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return self._server.origin + "/stub"

    def __enter__(self) -> StubEmulator:
        app = Starlette(routes=[HttpRoute("/stub/turn", self._turn, methods=["POST"])])
        self._server = LoopbackServer(app, name="stub-emulator").start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.stop()

    async def _turn(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.received.append((dict(request.headers), body))
        for i, turn in enumerate(body["turns"]):
            if "sealed" in turn and not hmac.compare_digest(turn["sealed"], seal(turn["text"])):
                self.statuses.append(400)
                return Response(orjson.dumps({"error": {"code": "bad_seal", "turn": i}}),
                                status_code=400, media_type="application/json")
        self.statuses.append(200)
        text = f"reply {len(self.received)}"
        if not body.get("stream"):
            return Response(orjson.dumps({"text": text, "sealed": seal(text)}),
                            media_type="application/json")

        async def events() -> Any:
            for word in text.split(" "):
                yield b"event: piece\ndata: " + orjson.dumps({"text": word + " "}) + b"\n\n"
            yield b"event: seal\ndata: " + orjson.dumps({"sealed": seal(text + " ")}) + b"\n\n"
            yield b"event: end\ndata: {}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")
