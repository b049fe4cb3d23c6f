"""Warming the gateway before it says it is ready: what a first request would load on the
event loop — the faces' parsers, each upstream's codec, route table and replay plan, its
request builder, its HTTP client (httpx and httpcore are imported on first use) — is loaded at
start, so the first request costs what a steady one does (``/readyz`` answers only after).

Nothing is sent and nothing is stored: each upstream's request for a one-line question is built
and dropped. A step that fails (an upstream whose key variable is unset, say) is skipped: the
request that meets it later says why, as it would have without warming.
"""

from __future__ import annotations

import orjson

from thoughtline.codecs import registry
from thoughtline.errors import ThoughtlineError
from thoughtline.gateway import rehydrate
from thoughtline.gateway.config import GatewayConfig
from thoughtline.gateway.faces import FACES
from thoughtline.gateway.request import HttpError, client_request
from thoughtline.gateway.upstreams import Engines
from thoughtline.messages import user
from thoughtline.modelconfig import ModelConfig
from thoughtline.turn import TurnEngine, TurnInput


def warm(config: GatewayConfig, engines: Engines) -> list[str]:
    """Load what the first request would; returns the steps skipped, each with its reason."""
    skipped: list[str] = []
    for face in FACES:
        try:
            parsed = client_request(orjson.dumps(face.smallest_request("warm")), face)
            rehydrate.chain(parsed.messages)
        except HttpError as exc:
            skipped.append(f"face {face.name}: {exc}")
    for name, upstream in config.upstreams.items():
        model = next(iter(upstream.models), "") or upstream.provider.model or "warm"
        provider = upstream.for_model(model)
        engine = engines[upstream]
        try:
            turn = TurnInput(codec=registry.codec(provider.api), provider=provider,
                             config=ModelConfig(provider=provider), history=(),
                             pending=(user("hi"),))
            for stream in (False, True):
                TurnEngine.build(turn, stream=stream)
            url = turn.codec.endpoint(provider, model, stream=False).url
        except ThoughtlineError as exc:
            skipped.append(f"upstream {name}: {exc}")
            continue
        ready = getattr(engine.transport, "warm", None)
        if ready is not None:
            ready(url)
    return skipped

