"""Anthropic Messages rows for scenarios 1 (request build) and 3 (stream fold).

Request build: what a session does per request on the ``anthropic`` route — resolve the route,
make the replay plan, ``encode_request`` with the session's wire cache, ``orjson.dumps`` — beside
the floor, ``orjson.dumps`` of the same final body. The history is the shared synthetic one
(``synth.history``) with its reasoning re-made as Claude thinking: every turn a signed block
(~2 KB of text and a ~400-byte signature), every other turn a redacted block before it, so every
block replays (claude-opus-4-5 keeps prior thinking). Steady reuses one cache while the history
grows by a turn; cold starts with a fresh cache.

Stream fold: a 10,000-event Messages stream (``thinking_delta`` pieces, one ``signature_delta``,
``text_delta`` pieces, a long ``input_json_delta`` tool input) as ``(event name, data bytes)``;
ours is ``orjson.loads`` + ``StreamFold.add_event`` per event and ``finish``; the floor is
``orjson.loads`` of every event alone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import orjson

from benchmarks import synth
from benchmarks.measure import Budget, Row, at_most, paired, ratio
from thoughtline import replay
from thoughtline.codecs.anthropic import CODEC
from thoughtline.codecs.base import RequestSpec
from thoughtline.events import Done
from thoughtline.messages import Message, Origin, Reasoning, ToolCall
from thoughtline.wire.cache import WireCache

MODEL = "claude-opus-4-5"
ORIGIN = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com", model=MODEL)
SIZES = (10, 100, 1_000, 5_000)
QUICK_SIZES = (10, 100)
BUILD_TARGET = 2.0
FOLD_TARGET = 3.0
EVENTS = 10_000
QUICK_EVENTS = 1_000
SPEC = RequestSpec(model=MODEL, tools=(synth.TOOL,), stream=True)


def _as_claude(message: Message) -> Message:
    """A synthetic assistant turn as Claude returns it: (redacted,) signed thinking, tool call.

    The shared history carries its reasoning as readable text plus one opaque item (alternately
    an encrypted blob and a signature): the blob becomes a redacted block, the text a signed one.
    """
    if message.role != "assistant":
        return message
    thought = message.reasoning_text()
    parts: list[Any] = []
    for part in message.parts:
        if isinstance(part, Reasoning) and part.kind == "encrypted":
            parts.append(Reasoning(kind="redacted", data=part.data, origin=ORIGIN))
            parts.append(Reasoning(kind="signed", text=thought, signature=(part.data or "")[::-1],
                                   origin=ORIGIN))
        elif isinstance(part, Reasoning) and part.kind == "signed":
            parts.append(Reasoning(kind="signed", text=thought, signature=part.signature,
                                   origin=ORIGIN))
        elif isinstance(part, ToolCall):
            parts.append(part)
    return Message(role="assistant", parts=tuple(parts), origin=ORIGIN)


def history(n: int, pool: int) -> tuple[Message, ...]:
    return tuple(_as_claude(m) for m in synth.history(n, pool=pool))


def request_bytes(messages: Sequence[Message], cache: WireCache | None) -> bytes:
    route = CODEC.resolve("anthropic", None, MODEL)
    plan = replay.plan(route, ())
    return CODEC.encode_request(messages, plan, SPEC, cache).raw  # the bytes sent


def _build_rows(n: int, pool: int, budget: Budget) -> list[Row]:
    hist = history(n, pool)
    head, tail = hist[:-3], hist[-3:]
    cache = WireCache()
    request_bytes(head, cache)
    body = orjson.loads(request_bytes(hist, None))
    steady, floor, reps = paired(lambda fresh: request_bytes([*head, *fresh], cache),
                                 lambda _: orjson.dumps(body), budget,
                                 prepare=lambda: [replace(m) for m in tail])
    cold, cold_floor, cold_reps = paired(lambda c: request_bytes(hist, c),
                                         lambda _: orjson.dumps(body), budget,
                                         prepare=WireCache)
    size, extra = f"N={n:,}", {"turns": n, "body_bytes": len(orjson.dumps(body))}
    r = ratio(steady, floor)
    targeted = n == 1_000
    return [
        Row(scenario="request build", case="anthropic (signed + redacted) steady", size=size,
            ours=steady, floor=floor, floor_kind="orjson.dumps(body)", ratio=r,
            target=f"≤ {BUILD_TARGET:g}× floor" if targeted else "",
            ok=at_most(r, BUILD_TARGET) if targeted else None, reps=reps, extra=extra),
        Row(scenario="request build", case="anthropic (signed + redacted) cold", size=size,
            ours=cold, floor=cold_floor, floor_kind="orjson.dumps(body)",
            ratio=ratio(cold, cold_floor), reps=cold_reps, extra=extra),
    ]


def stream_events(count: int) -> list[tuple[str, bytes]]:
    """A Messages stream of about ``count`` events: thinking, signature, text, tool input."""
    words = synth.history(1)[2].reasoning_text().split()
    signature = "EqQBCkYIBxgCKkB" + "A" * 380
    share = max(1, (count - 12) // 3)
    arguments = json.dumps({"path": "notes.md", "text": " ".join(words * 8)})
    size = max(1, len(arguments) // share + 1)
    out: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_bench", "type": "message",
                                              "role": "assistant", "model": MODEL, "content": [],
                                              "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": ""}}]
    out += [{"type": "content_block_delta", "index": 0,
             "delta": {"type": "thinking_delta", "thinking": words[i % len(words)] + " "}}
            for i in range(share)]
    out += [{"type": "content_block_delta", "index": 0,
             "delta": {"type": "signature_delta", "signature": signature}},
            {"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1, "content_block": {"type": "text",
                                                                          "text": ""}}]
    out += [{"type": "content_block_delta", "index": 1,
             "delta": {"type": "text_delta", "text": words[i % len(words)] + " "}}
            for i in range(share)]
    out += [{"type": "content_block_stop", "index": 1},
            {"type": "content_block_start", "index": 2, "content_block": {
                "type": "tool_use", "id": "toolu_bench", "name": "write_file", "input": {}}}]
    out += [{"type": "content_block_delta", "index": 2,
             "delta": {"type": "input_json_delta", "partial_json": arguments[i:i + size]}}
            for i in range(0, len(arguments), size)]
    out += [{"type": "content_block_stop", "index": 2},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
             "usage": {"output_tokens": 5000}},
            {"type": "message_stop"}]
    return [(event["type"], orjson.dumps(event)) for event in out]


def fold(events: Sequence[tuple[str, bytes]]) -> Done:
    state = CODEC.new_fold(ORIGIN)
    add, loads = state.add_event, orjson.loads
    for name, raw in events:
        add(name, loads(raw))
    return state.finish()


def _parse_only(events: Sequence[tuple[str, bytes]]) -> None:
    loads = orjson.loads
    for _, raw in events:
        loads(raw)


def _fold_row(count: int, budget: Budget) -> Row:
    events = stream_events(count)
    t, floor, reps = paired(fold, _parse_only, budget, prepare=lambda: events,
                            floor_prepare=lambda: events)
    r = ratio(t, floor)
    return Row(scenario="stream fold", case="anthropic thinking + text + tool input stream",
               size=f"{len(events):,} events", ours=t, floor=floor,
               floor_kind="orjson.loads per event", ratio=r, target=f"≤ {FOLD_TARGET:g}× floor",
               ok=at_most(r, FOLD_TARGET), reps=reps,
               extra={"stream_bytes": sum(len(raw) for _, raw in events)})


def run(budget: Budget, quick: bool) -> list[Row]:
    sizes = QUICK_SIZES if quick else SIZES
    rows: list[Row] = []
    for n in sizes:
        small = replace(budget, max_reps=9, min_reps=min(budget.min_reps, 5)) if n >= 5_000 \
            else budget
        rows.extend(_build_rows(n, max(sizes), small))
    rows.append(_fold_row(QUICK_EVENTS if quick else EVENTS, budget))
    return rows
