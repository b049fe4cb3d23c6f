"""Scenario 1 — request build: from a loaded history to the bytes sent on the wire.

The measured path is what a session does per request: resolve the route, make the replay plan,
``encode_request`` (with the session's ``WireCache``) and ``orjson.dumps`` the body. The floor is
``orjson.dumps`` of the very same final body alone — the cost of serializing, which no build can
beat. Steady state is one cache reused while the history gains a turn per request (the newest turn
— assistant, tool result, user — is not yet cached, as in real use); cold is a fresh cache (the
first request after loading a session). The session path adds ``Session.build_request`` around the
codec (route, verdict ledger read, plan).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from benchmarks import synth
from benchmarks.measure import Budget, Row, at_most, not_built, paired, ratio
from thoughtline import config, replay
from thoughtline.codecs import openai_chat, registry
from thoughtline.codecs.base import RequestSpec
from thoughtline.messages import Message
from thoughtline.routes import resolve

SCENARIO = "request build"
SIZES = (10, 100, 1_000, 5_000)
QUICK_SIZES = (10, 100)
TARGET_N = 1_000
TARGET_RATIO = 2.0
LINEAR_GROWTH = 1.5  # our ratio-to-floor at the largest N may grow at most this much over N=1,000


@dataclass(frozen=True, kw_only=True, slots=True)
class RouteCase:
    label: str  # what the route stands for in the table
    preset: str

    @property
    def provider(self) -> config.ProviderConfig:
        return config.presets()[self.preset]


ROUTES = (
    RouteCase(label="chat deepseek (must-echo)", preset="deepseek"),
    RouteCase(label="chat mistral (strict)", preset="mistral"),
    RouteCase(label="chat openrouter (RC+R+RD)", preset="openrouter"),
)
#: APIs the issue lists whose codecs may not exist yet: printed as such, never dropped silently.
#: (The Anthropic, Gemini, Bedrock and Responses rows live in benchmarks/<api>_rows.py.)
OTHER_APIS: tuple[tuple[str, str], ...] = ()
TOOLS = (synth.TOOL,)


def request_body(history: Sequence[Message], case: RouteCase,
                 cache: openai_chat.WireCache | None) -> dict[str, Any]:
    """The body one request carries: route → plan → ``encode_request`` (what a session does)."""
    p = case.provider
    route = resolve(p.api, p.id, p.base_url, p.model, echo=p.echo)  # type: ignore[arg-type]
    plan = replay.plan(route, ())
    return openai_chat.encode_request(history, plan, model=p.model, tools=TOOLS, stream=True,
                                      cache=cache)


def request_bytes(history: Sequence[Message], case: RouteCase,
                  cache: openai_chat.WireCache | None) -> bytes:
    """The bytes one request sends, as the codec produces them for a session (with its cache,
    the turns earlier requests carried are spliced as the bytes they were serialized to)."""
    p = case.provider
    route = resolve(p.api, p.id, p.base_url, p.model, echo=p.echo)  # type: ignore[arg-type]
    spec = RequestSpec(model=p.model, tools=TOOLS, stream=True)
    return openai_chat.CODEC.encode_request(history, replay.plan(route, ()), spec, cache).raw


def _fresh(messages: Sequence[Message]) -> list[Message]:
    """Equal turns under new identities: the cache has never seen them (a newly added turn)."""
    return [replace(m) for m in messages]


def steady(history: Sequence[Message], case: RouteCase, budget: Budget) -> Row:
    head, tail = tuple(history[:-3]), tuple(history[-3:])
    cache = openai_chat.WireCache()
    request_bytes(head, case, cache)  # the turns before this request were sent (and cached)
    body = request_body([*head, *tail], case, cache)

    def ours(fresh: list[Message]) -> bytes:
        return request_bytes([*head, *fresh], case, cache)

    t, floor, reps = paired(ours, lambda _: orjson.dumps(body), budget,
                            prepare=lambda: _fresh(tail))
    return _row(case.label + " steady", history, t, floor, reps, body)


def cold(history: Sequence[Message], case: RouteCase, budget: Budget) -> Row:
    body = request_body(history, case, None)
    t, floor, reps = paired(lambda cache: request_bytes(history, case, cache),
                            lambda _: orjson.dumps(body), budget,
                            prepare=openai_chat.WireCache)
    return _row(case.label + " cold", history, t, floor, reps, body)


def session_steady(history: Sequence[Message], case: RouteCase, budget: Budget) -> Row:
    """``Session.request_bytes`` (what ``build_request`` + ``orjson.dumps`` gave before the
    session built its requests as bytes), on a session whose history is loaded."""
    from thoughtline.session import Session
    from thoughtline.store import open_store

    head, tail = tuple(history[:-3]), tuple(history[-3:])
    with tempfile.TemporaryDirectory(prefix="tl-bench-") as home:
        store = open_store(None, Path(home))
        try:
            seed = Session.create(store, case.provider)
            session = Session(store=store, record=seed.record, history=head)
            session.build_request(stream=True)  # the previous request cached the head
            body, _ = session.build_request(tail, stream=True)

            def ours(fresh: list[Message]) -> bytes:
                # The bytes the session sends (its request is built as bytes: issue 24; a
                # dict of it, ``build_request``, is parsed back from them only when asked).
                return session.request_bytes(fresh, stream=True)

            t, floor, reps = paired(ours, lambda _: orjson.dumps(body), budget,
                                    prepare=lambda: _fresh(tail))
        finally:
            store.close()
    return _row(case.label + " steady, Session.build_request", history, t, floor, reps, body)


def _row(case: str, history: Sequence[Message], t: float, floor: float | None, reps: int,
         body: dict[str, Any]) -> Row:
    turns = (len(history) - 2) // 3
    r = ratio(t, floor)
    targeted = turns == TARGET_N and "steady" in case and "Session" not in case
    return Row(scenario=SCENARIO, case=case, size=f"N={turns:,}", ours=t, floor=floor,
               floor_kind="orjson.dumps(body)", ratio=r,
               target=f"≤ {TARGET_RATIO:g}× floor" if targeted else "",
               ok=at_most(r, TARGET_RATIO) if targeted else None, reps=reps,
               extra={"turns": turns, "messages": len(history),
                      "body_bytes": len(orjson.dumps(body))})


def linearity(rows: Sequence[Row], label: str) -> Row | None:
    """How our per-turn cost grows from N = 1,000 to the largest N, beside the serializer's.

    Judged on the ratio to the floor (both interleaved, so machine noise hits them alike): our
    ratio at the largest N over our ratio at 1,000. 1.0 means we scale exactly like
    ``orjson.dumps`` itself, i.e. linearly in the bytes sent.
    """
    by_turns = {r.extra["turns"]: r for r in rows if r.case == label + " steady"}
    if TARGET_N not in by_turns or max(by_turns) <= TARGET_N:
        return None
    big, base = by_turns[max(by_turns)], by_turns[TARGET_N]
    scale = big.extra["turns"] / TARGET_N
    if not (big.ours and base.ours and big.floor and base.floor and big.ratio and base.ratio):
        return None
    growth = big.ours / base.ours / scale
    floor_growth = big.floor / base.floor / scale
    drift = big.ratio / base.ratio
    return Row(scenario=SCENARIO, case=label + " linearity (per-turn cost, largest N ÷ 1,000)",
               size=f"N={TARGET_N:,}→{big.extra['turns']:,}", ours=growth, floor=floor_growth,
               floor_kind="orjson.dumps per-turn growth", unit="x", ratio=drift,
               target=f"ratio ≤ {LINEAR_GROWTH:g}×", ok=at_most(drift, LINEAR_GROWTH),
               note="ratio = our ratio-to-floor at the largest N ÷ at N=1,000 (1.0: as linear "
                    "as the serializer)")


def run(budget: Budget, *, quick: bool) -> list[Row]:
    sizes = QUICK_SIZES if quick else SIZES
    rows: list[Row] = []
    for case in ROUTES:
        for n in sizes:
            hist = synth.history(n, pool=max(sizes))
            rows.append(steady(hist, case, _budget_for(budget, n)))
            rows.append(cold(hist, case, _budget_for(budget, n)))
        line = linearity(rows, case.label)
        if line is not None:
            rows.append(line)
    deepseek = ROUTES[0]
    for n in sizes:
        hist = synth.history(n, pool=max(sizes))
        rows.append(session_steady(hist, deepseek, _budget_for(budget, n)))
    known = set(registry.apis())
    for api, name in OTHER_APIS:
        if api in known:
            rows.append(not_built(SCENARIO, name, f"the {api} codec exists; its benchmark is "
                                  "not wired yet"))
        else:
            rows.append(not_built(SCENARIO, name, "codec not built yet"))
    return rows


def _budget_for(budget: Budget, n: int) -> Budget:
    # Big histories: fewer repetitions (each call is tens of ms); the median still needs 3+.
    if n >= 5_000:
        return replace(budget, seconds=budget.seconds * 2, min_reps=min(budget.min_reps, 5),
                       max_reps=9)
    if n >= 1_000:
        return replace(budget, seconds=budget.seconds * 2)
    return budget
