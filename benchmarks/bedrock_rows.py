"""Bedrock Converse rows: request build (steady and cold) per model policy, and stream fold.

Request build: a tool-calling history of N turns made by the target model (Claude signed
thinking, gpt-oss readable text, GPT-5.6 ``redactedContent``), encoded for that model through
route → plan → the core's ``WireCache`` (each turn encoded once, the request spliced from the
turns' bytes); the floor is ``orjson.dumps`` of the very same body. Steady state reuses one cache
while the newest three turns are new (as in real use); cold starts from an empty cache. Stream
fold: a ConverseStream of 10,000 events (reasoning text fragments, a signature, text), each
payload parsed and folded, then ``finish``; the floor is ``orjson.loads`` of every payload alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import orjson

from benchmarks.measure import Budget, Row, at_most, paired, ratio
from thoughtline import replay
from thoughtline.codecs.base import Encoded, RequestSpec
from thoughtline.codecs.bedrock import CODEC
from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    tool_results,
    user,
)
from thoughtline.wire.cache import WireCache, encode

SCENARIO = "bedrock"
SIZES = (100, 1_000)
QUICK_SIZES = (10, 100)
EVENTS = 10_000
QUICK_EVENTS = 1_000
TARGET_RATIO = 2.0  # request build at N=1,000, steady: as for Chat Completions
FOLD_RATIO = 3.0
TOOL = ToolSpec(name="lookup", parameters={"type": "object", "properties": {
    "query": {"type": "string"}}, "required": ["query"]})
MODELS = (("claude signed", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
          ("gpt-oss unsigned", "openai.gpt-oss-120b-1:0"),
          ("gpt-5.6 redacted-only", "us.openai.gpt-5.6-luna"))
_THOUGHT = "Let me look that up before answering; the user asked about item {n}. " * 6


def _reasoning(model: str, origin: Origin, n: int) -> Reasoning:
    if "claude" in model:
        return Reasoning(kind="signed", text=_THOUGHT.format(n=n), origin=origin,
                         signature="Eo" + f"{n:08d}" * 40)
    if "gpt-5" in model:
        return Reasoning(kind="encrypted", data="cnNu" + f"{n:08d}" * 60, origin=origin)
    return Reasoning(kind="text", text=_THOUGHT.format(n=n), origin=origin)


def history(model: str, turns: int) -> list[Message]:
    """``turns`` tool round trips (assistant call, tool result, next user question)."""
    origin = Origin(api="bedrock", provider="bedrock", model=model, region="us-east-1")
    out: list[Message] = [user("start")]
    for n in range(turns):
        call = ToolCall(id=f"tooluse_{n:020d}", name="lookup", arguments=f'{{"query":"q{n}"}}')
        out.append(Message(role="assistant", origin=origin, parts=(
            _reasoning(model, origin, n), Text(text=f"Looking up item {n}."), call)))
        out.append(tool_results([ToolResult(call_id=call.id, content=f"result {n}")]))
        out.append(user(f"and item {n + 1}?"))
    return out


def _encoded(messages: Sequence[Message], model: str, cache: WireCache | None) -> Encoded:
    route = CODEC.resolve("bedrock", None, model)
    plan = replay.plan(route, (), region="us-east-1")
    spec = RequestSpec(model=model, tools=(TOOL,), stream=True)
    return encode(CODEC, messages, plan, spec, cache)


def _body(messages: Sequence[Message], model: str, cache: WireCache | None) -> Any:
    return _encoded(messages, model, cache).body


def _bytes(messages: Sequence[Message], model: str, cache: WireCache | None) -> bytes:
    """The request's bytes (spliced from its turns' bytes: serializing is part of the build)."""
    return _encoded(messages, model, cache).raw


def _fresh(messages: Sequence[Message]) -> list[Message]:
    return [replace(m) for m in messages]


def build_rows(label: str, model: str, turns: int, budget: Budget) -> list[Row]:
    messages = history(model, turns)
    head, tail = tuple(messages[:-3]), tuple(messages[-3:])
    cache = WireCache()
    _bytes(head, model, cache)
    body = _body([*head, *tail], model, cache)  # the floor serializes this very body
    floor_call = lambda _: orjson.dumps(body)  # noqa: E731
    steady, floor, reps = paired(lambda fresh: _bytes([*head, *fresh], model, cache), floor_call,
                                 budget, prepare=lambda: _fresh(tail))
    cold, cold_floor, cold_reps = paired(lambda c: _bytes(messages, model, c), floor_call,
                                         budget, prepare=WireCache)
    rows = []
    for kind, t, f, r in (("steady", steady, floor, reps), ("cold", cold, cold_floor, cold_reps)):
        targeted = turns == 1_000 and kind == "steady"
        value = ratio(t, f)
        rows.append(Row(scenario=SCENARIO, case=f"request build, {label} {kind}",
                        size=f"N={turns:,}", ours=t, floor=f, floor_kind="orjson.dumps(body)",
                        ratio=value, target=f"≤ {TARGET_RATIO:g}× floor" if targeted else "",
                        ok=at_most(value, TARGET_RATIO) if targeted else None, reps=r,
                        extra={"body_bytes": len(orjson.dumps(body))}))
    return rows


def stream_payloads(count: int) -> list[bytes]:
    """A Claude ConverseStream: thinking fragments, one signature, then answer fragments."""
    half = count // 2
    events: list[tuple[str, Any]] = [("messageStart", {"role": "assistant"})]
    events += [("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {
        "text": f"thought {n} "}}}) for n in range(half)]
    events.append(("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {
        "signature": "Eo" + "x" * 400}}}))
    events.append(("contentBlockStop", {"contentBlockIndex": 0}))
    events += [("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": f"word {n} "}})
               for n in range(count - half - 5)]
    events += [("contentBlockStop", {"contentBlockIndex": 1}),
               ("messageStop", {"stopReason": "end_turn"}),
               ("metadata", {"usage": {"inputTokens": 10, "outputTokens": count}})]
    return [orjson.dumps([kind, payload]) for kind, payload in events]


def _fold(raw: Sequence[bytes]) -> Any:
    state = CODEC.new_fold(Origin(api="bedrock", provider="bedrock",
                                  model="us.anthropic.claude-sonnet-4-5-20250929-v1:0"))
    add, loads = state.add_event, orjson.loads
    for item in raw:
        kind, payload = loads(item)
        add(kind, payload)
    return state.finish()


def _parse(raw: Sequence[bytes]) -> None:
    loads = orjson.loads
    for item in raw:
        loads(item)


def fold_row(count: int, budget: Budget) -> Row:
    raw = stream_payloads(count)
    t, floor, reps = paired(_fold, _parse, budget, prepare=lambda: raw,
                            floor_prepare=lambda: raw)
    value = ratio(t, floor)
    return Row(scenario=SCENARIO, case="stream fold, claude thinking", size=f"{count:,} events",
               ours=t, floor=floor, floor_kind="orjson.loads per event", ratio=value,
               target=f"≤ {FOLD_RATIO:g}× floor", ok=at_most(value, FOLD_RATIO), reps=reps)


def run(budget: Budget, quick: bool) -> list[Row]:
    rows: list[Row] = []
    for label, model in MODELS:
        for turns in QUICK_SIZES if quick else SIZES:
            rows.extend(build_rows(label, model, turns, budget))
    rows.append(fold_row(QUICK_EVENTS if quick else EVENTS, budget))
    return rows
