"""The Anthropic benchmark rows time the bytes the codec actually sends (tiny sizes, no timers)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``benchmarks`` is a top-level package beside ``src``

from benchmarks import anthropic_rows  # noqa: E402

from thoughtline.messages import Reasoning  # noqa: E402
from thoughtline.wire.cache import WireCache  # noqa: E402


def test_the_history_replays_signed_and_redacted_blocks_and_the_cache_changes_nothing() -> None:
    history = anthropic_rows.history(4, 10)
    kinds = {p.kind for m in history for p in m.parts if isinstance(p, Reasoning)}
    assert kinds == {"signed", "redacted"}
    cold = anthropic_rows.request_bytes(history, None)
    cache = WireCache()
    anthropic_rows.request_bytes(history[:-3], cache)
    assert anthropic_rows.request_bytes(history, cache) == cold  # the steady path: same bytes
    body = orjson.loads(cold)
    sent = [b["type"] for m in body["messages"] if m["role"] == "assistant" for b in m["content"]]
    assert sent.count("thinking") == 4 and sent.count("redacted_thinking") == 2


def test_the_stream_folds_to_one_turn_with_the_whole_tool_input() -> None:
    events = anthropic_rows.stream_events(300)
    done = anthropic_rows.fold(events)
    [call] = done.message.tool_calls
    sent = "".join(orjson.loads(raw)["delta"].get("partial_json", "") for _, raw in events
                   if b"input_json_delta" in raw)
    assert json.loads(call.arguments) == json.loads(sent)
    assert done.message.parts[0].signature and done.finish == "tool_calls"
