"""The OpenAI Responses rows: request build, stream fold and repair on stateless Responses routes.

- **request build**: a history of N tool-loop turns (each a reasoning item with ~1.3 KB of
  encrypted content, a ``commentary`` message with its ``phase``, a function call, its result and
  the next user message) encoded for the ``openai-responses`` route — route, plan,
  ``encode_request`` with the session's ``WireCache``, ``orjson.dumps`` — against the floor of
  ``orjson.dumps`` of the same body. Steady state reuses one cache while the history gains a
  turn; cold starts from a fresh cache (the first request after a resume).
- **stream fold**: a 10,000-event Responses stream (summary, text and argument deltas, items
  added and done, ``response.completed``) parsed and folded, against ``orjson.loads`` per event.
- **repair**: reading an ``invalid_encrypted_content`` 400 against a body of N turns (finding
  the one offending item), with no floor: it runs once per rejection.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import orjson

from benchmarks.measure import Budget, Row, at_most, paired, ratio
from thoughtline import config, replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import RequestSpec
from thoughtline.codecs.openai_responses import StreamFold, classify, encode_request
from thoughtline.messages import Message, Origin, ToolResult, tool_results, user
from thoughtline.wire.cache import WireCache

API = "openai-responses"
SIZES = (10, 100, 1_000)
QUICK_SIZES = (10, 100)
EVENTS = 10_000
QUICK_EVENTS = 1_000
TARGET_BUILD = 2.0  # steady state at TARGET_N turns, as for the Chat rows
TARGET_N = 1_000
TARGET_FOLD = 3.0
SPEC = RequestSpec(model="gpt-5.5")
ORIGIN = Origin(api=API, provider="openai-responses", host="api.openai.com", model="gpt-5.5")


def _encrypted(index: int) -> str:
    # Fernet-like, ~1.3 KB: the size of the recorded gpt-5 items (tests/fixtures/openai-responses)
    body = (f"{index:08d}" * 160)[:1300]
    return "gAAAAAB" + body


def _turn(index: int) -> list[Message]:
    codec = registry.codec(API)
    output = [
        {"id": f"rs_{index:08d}", "type": "reasoning", "encrypted_content": _encrypted(index),
         "summary": [{"type": "summary_text", "text": f"Thinking about step {index}."}]},
        {"id": f"msg_{index:08d}", "type": "message", "status": "completed",
         "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                      "text": f"I'll look up item {index}."}],
         "phase": "commentary", "role": "assistant"},
        {"id": f"fc_{index:08d}", "type": "function_call", "status": "completed",
         "arguments": orjson.dumps({"query": f"item {index}"}).decode(),
         "call_id": f"call_{index:08d}", "name": "lookup"},
    ]
    answer = codec.decode_response({"id": f"resp_{index}", "status": "completed",
                                    "output": output}, ORIGIN).message
    return [user(f"question {index}"), answer,
            tool_results([ToolResult(call_id=f"call_{index:08d}", content=f"result {index}")])]


def history(turns: int) -> list[Message]:
    return [m for i in range(turns) for m in _turn(i)]


def _plan() -> replay.ReplayPlan:
    provider = config.presets()["openai-responses"]
    route = registry.codec(API).resolve(provider.route_id, provider.base_url, provider.model)
    return replay.plan(route)


def _build(history_: Sequence[Message], cache: WireCache | None) -> bytes:
    """The bytes a session sends: the codec through the core's wire cache (its ``raw``; reading
    the body back and dumping it again would time a round-trip no request makes)."""
    return registry.codec(API).encode_request(history_, _plan(), SPEC, cache).raw


def build_rows(budget: Budget, sizes: Sequence[int]) -> list[Row]:
    rows: list[Row] = []
    for turns in sizes:
        full = history(turns + 1)
        grown = full[:-3]
        body = encode_request(full, _plan(), model="gpt-5.5")
        for label, fresh in (("steady", False), ("cold", True)):
            def prepare(fresh: bool = fresh, full: list[Message] = full,
                        grown: list[Message] = grown) -> tuple[list[Message], WireCache]:
                cache = WireCache()
                if not fresh:
                    _build(grown, cache)
                return full, cache

            t, floor, reps = paired(lambda arg: _build(*arg), orjson.dumps, budget,
                                    prepare=prepare, floor_prepare=lambda b=body: b)
            r = ratio(t, floor)
            judged = label == "steady" and turns == TARGET_N
            rows.append(Row(
                scenario="request build", case=f"responses openai ({label})",
                size=f"{turns:,} turns", ours=t, floor=floor, floor_kind="orjson.dumps of body",
                ratio=r, target=f"≤ {TARGET_BUILD:g}× floor" if judged else "",
                ok=at_most(r, TARGET_BUILD) if judged else None, reps=reps,
                extra={"body_bytes": len(orjson.dumps(body))}))
    return rows


def stream_events(count: int) -> list[bytes]:
    """A synthetic Responses stream of about ``count`` events, serialized like SSE data lines."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {
        "id": "resp_bench", "status": "in_progress", "output": []}}]
    per = max(1, (count - 12) // 3)
    reasoning = {"id": "rs_b", "type": "reasoning", "encrypted_content": _encrypted(1),
                 "summary": []}
    events.append({"type": "response.output_item.added", "output_index": 0, "item": reasoning})
    events += [{"type": "response.reasoning_summary_text.delta", "output_index": 0,
                "summary_index": 0, "delta": "think "} for _ in range(per)]
    done_reasoning = {**reasoning, "summary": [{"type": "summary_text", "text": "think " * per}]}
    events.append({"type": "response.output_item.done", "output_index": 0,
                   "item": done_reasoning})
    message = {"id": "msg_b", "type": "message", "status": "in_progress", "content": [],
               "phase": "commentary", "role": "assistant"}
    events.append({"type": "response.output_item.added", "output_index": 1, "item": message})
    events.append({"type": "response.content_part.added", "output_index": 1, "content_index": 0,
                   "part": {"type": "output_text", "annotations": [], "text": ""}})
    events += [{"type": "response.output_text.delta", "output_index": 1, "content_index": 0,
                "delta": "word "} for _ in range(per)]
    done_message = {**message, "status": "completed", "content": [
        {"type": "output_text", "annotations": [], "text": "word " * per}]}
    events.append({"type": "response.output_item.done", "output_index": 1, "item": done_message})
    call = {"id": "fc_b", "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": "call_b", "name": "write_file"}
    events.append({"type": "response.output_item.added", "output_index": 2, "item": call})
    events += [{"type": "response.function_call_arguments.delta", "output_index": 2,
                "delta": "abcdefgh"} for _ in range(per)]
    done_call = {**call, "status": "completed", "arguments": "abcdefgh" * per}
    events.append({"type": "response.output_item.done", "output_index": 2, "item": done_call})
    events.append({"type": "response.completed", "response": {
        "id": "resp_bench", "status": "completed",
        "output": [done_reasoning, done_message, done_call],
        "usage": {"input_tokens": 10, "output_tokens": per * 3}}})
    # Every event carries what the recorded OpenAI streams put on each one (item id, sequence
    # number, obfuscation padding on deltas: pydantic-ai-openai-responses-gpt55-phase-stream).
    ids = ("rs_" + "0" * 48, "msg_" + "1" * 48, "fc_" + "2" * 48)
    out = []
    for number, event in enumerate(events):
        if "output_index" in event:
            event = {**event, "item_id": ids[event["output_index"]]}
        if event["type"].endswith(".delta"):
            event = {**event, "obfuscation": "RvoJ43TaUvnCS8e"[: 8 + number % 8]}
        if event["type"] == "response.output_text.delta":
            event = {**event, "logprobs": []}
        out.append(orjson.dumps({**event, "sequence_number": number}))
    return out


def _fold(chunks: Sequence[bytes]) -> Any:
    state = StreamFold(ORIGIN)
    add, loads = state.add_event, orjson.loads
    for raw in chunks:
        add("", loads(raw))
    return state.finish()


def _parse(chunks: Sequence[bytes]) -> None:
    loads = orjson.loads
    for raw in chunks:
        loads(raw)


def fold_row(budget: Budget, count: int) -> Row:
    chunks = stream_events(count)
    t, floor, reps = paired(_fold, _parse, budget, prepare=lambda: chunks,
                            floor_prepare=lambda: chunks)
    r = ratio(t, floor)
    return Row(scenario="stream fold", case="responses openai stream", size=f"{len(chunks):,} "
               "events", ours=t, floor=floor, floor_kind="orjson.loads per event", ratio=r,
               target=f"≤ {TARGET_FOLD:g}× floor", ok=at_most(r, TARGET_FOLD), reps=reps,
               extra={"stream_bytes": sum(len(c) for c in chunks)})


def repair_row(turns: int) -> Row:
    body = encode_request(history(turns), _plan(), model="gpt-5.5")
    victim = [i for i in body["input"] if i.get("type") == "reasoning"][turns // 2]
    error = orjson.dumps({"error": {
        "message": f"The encrypted content for item {victim['id']} could not be verified.",
        "type": "invalid_request_error", "param": None,
        "code": "invalid_encrypted_content"}}).decode()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        lesson = classify(400, error, body)
        times.append(time.perf_counter() - start)
    assert lesson is not None and len(lesson.fingerprints) == 1
    return Row(scenario="repair", case="responses invalid_encrypted_content",
               size=f"{turns:,} turns", ours=sorted(times)[2], reps=5,
               note="find the one offending item; runs once per rejection")


def run(budget: Budget, quick: bool) -> list[Row]:
    sizes = QUICK_SIZES if quick else SIZES
    return [*build_rows(budget, sizes), fold_row(budget, QUICK_EVENTS if quick else EVENTS),
            repair_row(sizes[-1])]
