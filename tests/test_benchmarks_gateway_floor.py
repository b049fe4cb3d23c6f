"""The gateway-floor benchmark (issue 45 items 5 and 6): its rows judge each target as written,
its pass-through floor moves the bytes unchanged, and its stress clients count what they lose.
No timers, no timing assertions."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import httpx
import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``benchmarks`` is a top-level package beside ``src``

from benchmarks import gateway_floor_table as table  # noqa: E402
from benchmarks import gateway_procs, gateway_stress  # noqa: E402
from benchmarks.measure import Row  # noqa: E402

from thoughtline.testing import ChatEmulator  # noqa: E402
from thoughtline.testing.server import Received  # noqa: E402


def _face(gateway_ms: float, *, parse_ms: float = 1.0, pass_ms: float = 1.0,
          ) -> table.FaceNumbers:
    return table.FaceNumbers(body_bytes=70_000, gateway_cpu=gateway_ms / 1e3,
                             passthrough_cpu=pass_ms / 1e3, parse_floor=parse_ms / 1e3,
                             gateway_p50=0.006, passthrough_p50=0.003, direct_p50=0.002, reps=9)


def _by(numbers: table.Numbers) -> dict[tuple[str, str], Row]:
    return {(r.case, r.size): r for r in table.rows(numbers)}


def test_face_targets_follow_the_size_they_belong_to() -> None:
    numbers = table.Numbers()
    for face in ("chat", "messages", "responses"):
        # 40 turns: 15× the parse floor (≤ 20× met), 1.4× the pass-through (≤ 1.5× met);
        # 600 turns: 5× the parse floor (≤ 4× missed); 2,000 turns: no target.
        numbers.faces[(face, 40)] = _face(15.0, pass_ms=15.0 / 1.4)
        numbers.faces[(face, 600)] = _face(50.0, parse_ms=10.0, pass_ms=1.0)
        numbers.faces[(face, 2000)] = _face(400.0, parse_ms=1.0)
    by = _by(numbers)
    first = by[("Messages: gateway CPU per next request ÷ parse+serialize", "40 turns")]
    assert first.ok is True and first.ratio == pytest.approx(15.0) and "20×" in first.target
    second = by[("Messages: gateway CPU per next request ÷ parse+serialize", "600 turns")]
    assert second.ok is False and second.ratio == pytest.approx(5.0) and "4×" in second.target
    third = by[("Chat: gateway CPU per next request ÷ parse+serialize", "2000 turns")]
    assert third.ok is None and not third.target and third.ratio == pytest.approx(400.0)
    passing = by[("Responses: gateway CPU per next request ÷ pass-through", "40 turns")]
    assert passing.ok is True and passing.ratio == pytest.approx(1.4)
    # Only the 40-turn size carries the pass-through target: 50× at 600 turns is not judged.
    assert by[("Chat: gateway CPU per next request ÷ pass-through", "600 turns")].ok is None
    added = by[("Chat: added latency p50 vs pass-through", "40 turns")]
    assert added.ours == pytest.approx(0.004) and added.floor == pytest.approx(0.001)
    numbers.faces[("chat", 40)] = _face(16.0, pass_ms=10.0)
    assert _by(numbers)[("Chat: gateway CPU per next request ÷ pass-through", "40 turns")
                        ].ok is False


def test_stress_rows_miss_on_a_slow_healthz_a_lost_frame_or_a_wide_gap() -> None:
    streams = table.Streams(streams=512, peak_open=512, frames_expected=5632, frames_lost=0,
                            bad_streams=0, gap_p99=0.504, direct_gap_p99=0.501, gap_p50=0.5,
                            direct_gap_p50=0.5, chunk_delay=0.5, nofile="20000")
    healthz = table.Healthz(body_bytes=8 << 20, polls=300, worst=0.099, p50=0.002,
                            priced=1.5, tokens=10)
    rows = table.rows(table.Numbers(healthz=healthz, streams=streams))
    assert [r.ok for r in rows] == [True, True, True, True]
    worse = table.Numbers(healthz=replace(healthz, worst=0.101),
                          streams=replace(streams, peak_open=400, bad_streams=1, gap_p99=0.507))
    assert [r.ok for r in table.rows(worse)] == [False, False, False, False]


def test_a_stream_missing_a_frame_or_changing_its_text_is_counted() -> None:
    def got(*text: str, done: bool = True) -> gateway_stress.Stream:
        return gateway_stress.Stream(text=list(text), done=done)

    direct = [got("a", "b", "c"), got("d", "e"), got("f")]
    assert gateway_stress.tally(direct, [got("a", "b", "c"), got("d", "e"), got("f")]) == (
        6, 0, 0)
    # A frame merged into another keeps the text but loses a frame; a dropped one loses both;
    # a stream without its [DONE] is unfinished.
    via = [got("ab", "c"), got("d"), got("f", done=False)]
    assert gateway_stress.tally(direct, via) == (6, 2, 2)


def test_chat_chunk_fragments_are_reasoning_content_and_tool_arguments() -> None:
    chunk = {"choices": [{"delta": {"reasoning_content": "r", "content": "c", "tool_calls": [
        {"index": 0, "function": {"arguments": "{\"a\""}}]}}]}
    assert gateway_stress.fragments(orjson.dumps(chunk)) == "rc{\"a\""
    assert gateway_stress.fragments(b'{"choices":[{"delta":{"role":"assistant"}}]}') == ""


def test_the_count_tokens_body_is_the_size_asked_and_a_valid_conversation() -> None:
    body = gateway_stress.count_tokens_body(1 << 20, 5_000)
    parsed = orjson.loads(body)
    assert abs(len(body) - (1 << 20)) < (1 << 20) // 20
    roles = [m["role"] for m in parsed["messages"]]
    assert roles[0] == roles[-1] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles))


def test_the_pass_through_floor_forwards_bytes_unchanged_and_answers_as_the_upstream() -> None:
    body = json.dumps({"model": "deepseek-v4-pro",
                       "messages": [{"role": "user", "content": "Hi  there"}]}).encode()
    with ChatEmulator("deepseek") as emu, gateway_procs.passthrough(emu.base_url) as proxy, \
            httpx.Client(timeout=30, headers={"authorization": "Bearer sk-x",
                                              "content-type": "application/json"}) as client:
        whole = client.post(proxy.url + "/chat/completions", content=body)
        assert emu.received[-1].raw == body
        assert emu.received[-1].path.endswith("/chat/completions")
        direct = client.post(emu.base_url + "/chat/completions", content=body)
        assert whole.status_code == 200
        assert _same(whole.json(), direct.json())
        streamed = orjson.dumps({**orjson.loads(body), "stream": True})
        with client.stream("POST", proxy.url + "/chat/completions", content=streamed) as answer:
            assert answer.headers["content-type"].startswith("text/event-stream")
            lines = [ln for ln in answer.iter_lines() if ln.startswith("data: ")]
        assert lines[-1] == "data: [DONE]" and len(lines) > 2


def _same(a: dict[str, object], b: dict[str, object]) -> bool:
    """Two answers of the emulator to the same request: equal but for their id and time."""
    drop = ("id", "created")
    return {k: v for k, v in a.items() if k not in drop} == {
        k: v for k, v in b.items() if k not in drop}


def test_the_scenario_is_registered() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert "gateway-floor" in done.stdout


def test_litellm_stands_beside_each_face_and_its_absence_is_a_row_note() -> None:
    missing = table.Numbers(litellm_missing=table.LITELLM_MISSING)
    assert [r.note for r in table.rows(missing)] == [table.LITELLM_MISSING]
    assert "LiteLLM not installed, rows skipped in the table" in table.LITELLM_MISSING
    peer = table.Peer(cpu=0.020, p50=0.010, body_bytes=80_000)
    numbers = table.Numbers(litellm_version="1.0", litellm_failed={"responses": "400 no route"})
    numbers.faces[("chat", 40)] = replace(_face(5.0, pass_ms=2.5), litellm=peer)
    numbers.faces[("messages", 40)] = _face(5.0)
    by = _by(numbers)
    cpu = by[("Chat: gateway CPU per next request ÷ LiteLLM proxy's", "40 turns")]
    assert cpu.ours == pytest.approx(0.005) and cpu.floor == pytest.approx(0.020)
    assert cpu.ratio == pytest.approx(0.25) and "LiteLLM ÷ pass-through 8.00×" in cpu.note
    added = by[("Chat: added latency p50 vs LiteLLM proxy", "40 turns")]
    # ours adds 6 - 2 = 4 ms, LiteLLM 10 - 2 = 8 ms, the pass-through 3 - 2 = 1 ms
    assert added.ratio == pytest.approx(0.5) and "8.00×" in added.note
    assert ("Messages: added latency p50 vs LiteLLM proxy", "40 turns") not in by
    assert by[("LiteLLM proxy beside the floor, Responses", "—")].note.endswith("400 no route")
    assert ("LiteLLM proxy beside the floor", "—") not in by


def test_the_benchmark_emulator_answers_and_keeps_no_request() -> None:
    from benchmarks._emulator import Unkept, state

    with gateway_procs.emulator_process() as emu, httpx.Client(timeout=30) as client:
        answer = client.post(emu.url + "/chat/completions",
                             headers={"authorization": "Bearer sk-x"},
                             json={"model": "deepseek-v4-pro",
                                   "messages": [{"role": "user", "content": "Hi"}]})
        assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"]
    record = state("deepseek", require_auth=True, chunk_delay=0.0).received
    assert isinstance(record, Unkept)
    seen = Received(path="/v1/chat/completions", headers={}, body=None, raw=b"x", status=200)
    record.append(seen)
    record.extend([seen, seen])
    assert len(record) == 0 and record.seen == 3
