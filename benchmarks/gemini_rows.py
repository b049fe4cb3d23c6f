"""The Gemini native rows: request build and stream fold, measured like the Chat Completions rows.

Request build (``request_build``'s method): route → plan → the core's ``WireCache`` (each turn
encoded once, the request spliced from the turns' bytes) → the request bytes; the floor is
``orjson.dumps`` of the same final body. The history is N Gemini tool loops, each: a user
question, a model turn with a thought summary and a signed ``functionCall``, its result, and a
model answer whose text carries a signature (the shape of the recorded
``fantasy-gemini3-pro-thinking-function-call`` exchange). Steady state reuses the
cache with three new turns; cold starts from a fresh cache.

Stream fold (``stream_fold``'s method): ``orjson.loads`` + ``StreamFold.add`` per chunk, then
``finish``; the floor is ``orjson.loads`` of every chunk alone. Shapes: a text turn of 10,000
chunks (thoughts first, the signature on a trailing empty part, as recorded), and a turn of
parallel function calls (only the first signed).
"""

from __future__ import annotations

import base64
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import orjson

from benchmarks.measure import Budget, Row, at_most, paired, ratio
from thoughtline import config, replay
from thoughtline.codecs.base import Encoded, RequestSpec
from thoughtline.codecs.gemini.codec import CODEC
from thoughtline.codecs.gemini.fold import StreamFold
from thoughtline.events import Done
from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    system,
    tool_results,
    user,
)
from thoughtline.wire.cache import WireCache, encode

MODEL = "gemini-3-pro-preview"
ORIGIN = Origin(api="gemini", provider="gemini", host="generativelanguage.googleapis.com",
                model=MODEL)
TOOL = ToolSpec(name="search_docs", description="Search the project documentation.",
                parameters={"type": "object", "properties": {"query": {"type": "string"}},
                            "required": ["query"]})
SIZES = (10, 100, 1_000)
QUICK_SIZES = (10, 100)
TARGET_N = 1_000
BUILD_TARGET = 2.0
CHUNKS = 10_000
QUICK_CHUNKS = 1_000
FOLD_TARGET = 3.0
SIGNATURE_BYTES = 700  # recorded Gemini 3 signatures decode to ~500-1,200 bytes


def _signature(rng: random.Random) -> str:
    return base64.b64encode(rng.randbytes(SIGNATURE_BYTES)).decode()


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(("docs", "route", "signature", "model", "turn", "tool", "reply",
                                "gemini", "history", "replay")) for _ in range(count))


def history(n: int) -> tuple[Message, ...]:
    """``system`` + ``user`` + N tool loops (4 messages each): deterministic."""
    rng = random.Random(12)
    out: list[Message] = [system("You are a helpful assistant."), user("Start.")]
    for i in range(n):
        call = ToolCall(id=f"call{i:06d}", name=TOOL.name,
                        arguments=orjson.dumps({"query": _words(rng, 4)}).decode(),
                        native={"gemini": {"thoughtSignature": _signature(rng)}})
        out.append(Message(role="assistant", origin=ORIGIN, parts=(
            Reasoning(kind="summary", summary=_words(rng, 60), origin=ORIGIN), call)))
        out.append(tool_results([ToolResult(call_id=call.id, content=_words(rng, 80))]))
        out.append(Message(role="assistant", origin=ORIGIN, parts=(
            Text(text=_words(rng, 50), native={"gemini": {"thoughtSignature":
                                                          _signature(rng)}}),)))
        out.append(user(f"Question {i}: {_words(rng, 12)}"))
    return tuple(out)


def _plan() -> replay.ReplayPlan:
    p = config.presets()["gemini"]
    route = CODEC.resolve(p.route_id, p.base_url, MODEL)
    return replay.plan(route, ())


def _encoded(history: Sequence[Message], cache: WireCache | None) -> Encoded:
    spec = RequestSpec(model=MODEL, tools=(TOOL,), stream=True)
    return encode(CODEC, history, _plan(), spec, cache)


def request_body(history: Sequence[Message], cache: WireCache | None) -> Any:
    return _encoded(history, cache).body


def request_bytes(history: Sequence[Message], cache: WireCache | None) -> bytes:
    """The request's bytes (spliced from its turns' bytes: serializing is part of the build)."""
    return _encoded(history, cache).raw


def _fresh(messages: Sequence[Message]) -> list[Message]:
    return [replace(m) for m in messages]


def _build_row(case: str, n: int, t: float, floor: float | None, reps: int,
               body: Any) -> Row:
    r = ratio(t, floor)
    targeted = n == TARGET_N and case.endswith("steady")
    return Row(scenario="request build", case=case, size=f"N={n:,}", ours=t, floor=floor,
               floor_kind="orjson.dumps(body)", ratio=r,
               target=f"≤ {BUILD_TARGET:g}× floor" if targeted else "",
               ok=at_most(r, BUILD_TARGET) if targeted else None, reps=reps,
               extra={"turns": n, "body_bytes": len(orjson.dumps(body))})


def build_rows(budget: Budget, n: int) -> list[Row]:
    hist = history(n)
    head, tail = hist[:-3], hist[-3:]
    cache = WireCache()
    request_bytes(head, cache)
    body = request_body([*head, *tail], cache)
    t, floor, reps = paired(lambda fresh: request_bytes([*head, *fresh], cache),
                            lambda _: orjson.dumps(body), budget,
                            prepare=lambda: _fresh(tail))
    rows = [_build_row("gemini (signatures on calls and text) steady", n, t, floor, reps, body)]
    cold = request_body(hist, None)
    t, floor, reps = paired(lambda fresh: request_bytes(hist, fresh),
                            lambda _: orjson.dumps(cold), budget, prepare=WireCache)
    rows.append(_build_row("gemini (signatures on calls and text) cold", n, t, floor, reps,
                           cold))
    return rows


# --- stream fold ---------------------------------------------------------------------------------


def _chunk(parts: list[dict[str, Any]], *, finish: bool = False) -> bytes:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return orjson.dumps({"candidates": [candidate], "usageMetadata": {
        "promptTokenCount": 1200, "candidatesTokenCount": 900, "totalTokenCount": 2500,
        "thoughtsTokenCount": 400}, "modelVersion": MODEL, "responseId": "bench-response"})


def stream_chunks(shape: str, count: int) -> list[bytes]:
    rng = random.Random(7)
    if shape == "text":
        thoughts = count // 5
        chunks = [_chunk([{"text": _words(rng, 4) + " ", "thought": True}])
                  for _ in range(thoughts)]
        chunks += [_chunk([{"text": _words(rng, 4) + " "}]) for _ in range(count - thoughts - 1)]
        chunks.append(_chunk([{"text": "", "thoughtSignature": _signature(rng)}], finish=True))
        return chunks
    calls = [_chunk([{"functionCall": {"name": TOOL.name, "args": {"query": _words(rng, 6)},
                                       "id": f"c{i}"},
                      **({"thoughtSignature": _signature(rng)} if i == 0 else {})}])
             for i in range(count - 1)]
    return [*calls, _chunk([{"text": ""}], finish=True)]


def fold(chunks: Sequence[bytes]) -> Done:
    state = StreamFold(ORIGIN)
    add, loads = state.add, orjson.loads
    for raw in chunks:
        add(loads(raw))
    return state.finish()


def parse_only(chunks: Sequence[bytes]) -> None:
    loads = orjson.loads
    for raw in chunks:
        loads(raw)


def fold_row(budget: Budget, shape: str, count: int) -> Row:
    chunks = stream_chunks(shape, count)
    t, floor, reps = paired(fold, parse_only, budget, prepare=lambda: chunks,
                            floor_prepare=lambda: chunks)
    r = ratio(t, floor)
    if shape == "text":
        return Row(scenario="stream fold",
                   case="gemini text turn (thoughts, signature on the last part)",
                   size=f"{count:,} chunks", ours=t, floor=floor,
                   floor_kind="orjson.loads per chunk", ratio=r,
                   target=f"≤ {FOLD_TARGET:g}× floor", ok=at_most(r, FOLD_TARGET), reps=reps,
                   extra={"stream_bytes": sum(len(c) for c in chunks)})
    # Every chunk here is a whole call (Gemini sends arguments whole): the fold makes one tool
    # call and two events per chunk, which a parse of a 100-byte chunk cannot be compared with.
    return Row(scenario="stream fold", case="gemini parallel calls (first signed)",
               size=f"{count:,} calls", ours=t, floor=floor,
               floor_kind="orjson.loads per chunk", ratio=r, reps=reps,
               note="informational: one tool call per chunk",
               extra={"stream_bytes": sum(len(c) for c in chunks), "per_call_us":
                      round(t / count * 1e6, 2)})


def run(budget: Budget, quick: bool) -> list[Row]:
    rows: list[Row] = []
    for n in QUICK_SIZES if quick else SIZES:
        rows.extend(build_rows(budget, n))
    count = QUICK_CHUNKS if quick else CHUNKS
    for shape in ("text", "calls"):
        rows.append(fold_row(budget, shape, count if shape == "text" else count // 10))
    return rows
