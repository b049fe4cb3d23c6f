"""Small helpers for inspecting Chat Completions request bodies in tests.

Owns nothing but test conveniences: resolving a route and encoding a history for it, and walking a
body for keys. Expectations stay in the tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson

from thoughtline import replay
from thoughtline.codecs import openai_chat
from thoughtline.codecs.openai_chat.profile import resolve_chat as resolve
from thoughtline.messages import Message
from thoughtline.replay import ReplayPlan
from thoughtline.routes import Route
from thoughtline.verdicts import Verdict

RC, R, RD = "reasoning_content", "reasoning", "reasoning_details"
ALL_CARRIERS = frozenset({RC, R, RD})
COPILOT_KEYS = frozenset({"reasoning_opaque", "reasoning_text"})
#: Keys of thoughtline's own canonical / bookkeeping form; none may reach a wire.
OUR_KEYS = frozenset({"native", "origin", "complete", "kind", "t", "parts", "incomplete"})


def encode_on(history: Sequence[Message], provider: str, base_url: str | None = None,
              model: str = "", *, echo: str = "auto", verdicts: Iterable[Verdict] = (),
              producer_rule: bool = False,
              **kwargs: Any) -> tuple[Route, ReplayPlan, dict[str, Any]]:
    """Resolve a route, plan it and encode ``history``; the body is JSON round-tripped.

    Turns in these tests carry a fixed test origin, so by default the plan drops the producer
    rule (opaque reasoning only to the model that made it) and the tests see what the route
    reads; ``tests/codecs/test_cross_provider.py`` exercises the rule itself.
    """
    route = resolve(provider, base_url, model, echo=echo)  # type: ignore[arg-type]
    plan = replay.plan(route, verdicts)
    if not producer_rule:
        plan = dataclasses.replace(plan, target=None)
    body = openai_chat.encode_request(history, plan, model=model or "m", **kwargs)
    return route, plan, orjson.loads(orjson.dumps(body))


def walk_keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from walk_keys(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from walk_keys(inner)


def assistants(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]
