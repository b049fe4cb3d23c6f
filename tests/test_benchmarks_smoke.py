"""The benchmarks time the bytes we actually send: tiny sizes, no timers, no timing assertions.

Each scenario's measured path is run once on a small input and checked against what the product
does (the session's request, the stored history, the folded turn), so a benchmark can never
drift into timing a body we would not send.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx
import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``benchmarks`` is a top-level package beside ``src``

from benchmarks import (  # noqa: E402
    gateway_faces,
    gateway_load,
    gateway_procs,
    gateway_table,
    report,
    request_build,
    resume,
    store_append,
    stream_fold,
    synth,
)
from benchmarks.measure import Row, not_built  # noqa: E402

from thoughtline.codecs import openai_chat  # noqa: E402
from thoughtline.messages import Reasoning  # noqa: E402
from thoughtline.store import open_store  # noqa: E402

N = 4


def test_synthetic_history_is_deterministic_and_prefix_stable() -> None:
    small, big = synth.history(N), synth.history(N + 3, pool=50)
    assert len(small) == synth.history_size(N)
    assert small == big[: len(small)]
    assistant = small[2]
    assert assistant.role == "assistant" and len(assistant.tool_calls) == 1
    assert len(assistant.reasoning_text().encode()) == synth.REASONING_BYTES
    kinds = {p.kind for m in small for p in m.parts if isinstance(p, Reasoning)}
    assert kinds == {"text", "encrypted", "signed"}


@pytest.mark.parametrize("case", request_build.ROUTES, ids=lambda c: c.preset)
def test_request_build_times_the_body_it_sends(case: request_build.RouteCase) -> None:
    history = synth.history(N)
    head, tail = history[:-3], history[-3:]
    cache = openai_chat.WireCache()
    request_build.request_bytes(head, case, cache)
    steady = request_build.request_bytes([*head, *request_build._fresh(tail)], case, cache)
    cold = request_build.request_bytes(history, case, openai_chat.WireCache())
    floor = orjson.dumps(request_build.request_body(history, case, None))
    assert steady == cold == floor
    assert orjson.loads(floor)["model"] == case.provider.model


def test_codec_path_equals_what_the_session_sends(tmp_path: Path) -> None:
    from thoughtline.session import Session

    case = request_build.ROUTES[0]
    history = synth.history(N)
    store = open_store(None, tmp_path)
    try:
        record = store.create_session(model_config=synth.model_config(case.provider.to_json()))
        session = Session(store=store, record=record, history=history)
        body, _ = session.build_request(stream=True)
    finally:
        store.close()
    assert orjson.dumps(body) == request_build.request_bytes(history, case, None)


@pytest.mark.parametrize("shape", synth.STREAM_SHAPES)
def test_stream_fold_rebuilds_the_whole_turn(shape: str) -> None:
    chunks = synth.stream_chunks(shape, 200)
    assert len(chunks) == 200
    done = stream_fold.fold(chunks)
    assert done.finish_reason == "tool_calls"
    (call,) = done.message.tool_calls
    assert set(orjson.loads(call.arguments)) == {"query"}
    assert done.message.reasoning_text()
    assert bool(done.message.text) is (shape != "tool-call")
    if shape == "openrouter":
        assert any(p.kind == "signed" for p in done.message.reasoning)
    stream_fold.parse_only(chunks)


def test_store_scenario_writes_what_loads_back(tmp_path: Path) -> None:
    turns = store_append.turns_of(synth.history(3))
    path = tmp_path / "ours" / "state.db"
    path.parent.mkdir()
    store_append.append_ours(path, turns)
    store_append.append_floor(tmp_path / "floor.db", turns)
    assert store_append.db_bytes(path) > 0
    store = open_store(path, path.parent)
    try:
        (record,) = store.list_sessions()
        loaded = [m.message for m in store.load_history(record.id).messages]
    finally:
        store.close()
    assert loaded == [m for turn in turns for m in turn]


def test_resume_child_sends_the_same_bytes_as_its_floor(tmp_path: Path) -> None:
    session_id = resume.write_session(tmp_path, 3)
    numbers, _ = resume.run_child(tmp_path / "state.db", session_id)
    assert numbers["same_bytes"] is True
    assert numbers["turns"] == synth.history_size(3)
    assert numbers["bytes"] > 0


def test_every_api_resume_row_times_its_request_after_a_warm_up(tmp_path: Path) -> None:
    """Each API's resume row (Interactions included) times the request its session sends, after
    the warm-up resume of another session of the same API."""
    apis = resume._other_apis(2)
    assert [label.split()[0] for label, _, _ in apis] == [
        "responses", "gemini", "bedrock", "anthropic", "interactions"]
    for label, provider, history in apis:
        home, warm_home = tmp_path / label.split()[0], tmp_path / ("warm-" + label.split()[0])
        session_id = resume.write_other(home, provider, history)
        warm = (warm_home / "state.db", resume.write_other(warm_home, provider, history[:3]))
        numbers, _ = resume.run_child(home / "state.db", session_id, warm)
        assert numbers["same_bytes"] is True, label
        assert numbers["turns"] == len(history), label
        assert numbers["warm_s"] > 0, label


def test_openai_format_history_keeps_every_turn() -> None:
    history = synth.history(N)
    messages = synth.openai_messages(history)
    assistants = [m for m in messages if m["role"] == "assistant"]
    assert len(assistants) == N
    assert all(len(m["thinking_blocks"]) == 1 and len(m["tool_calls"]) == 1 for m in assistants)
    assert sum(m["role"] == "tool" for m in messages) == N


def test_report_prints_every_row_including_components_not_built() -> None:
    rows = [
        Row(scenario="request build", case="x", size="N=1", ours=0.002, floor=0.001,
            floor_kind="orjson.dumps(body)", ratio=2.0, target="≤ 2× floor", ok=True),
        not_built("gateway", "POST /v1/chat/completions overhead", "gateway not built yet"),
    ]
    text = report.text_table(rows)
    assert "gateway not built yet" in text and "2.00×" in text
    info = report.machine((0.0, 0.0, 0.0))
    assert "| scenario |" in report.markdown(rows, info, "python -m benchmarks")


# --- the gateway scenario: its rows and targets (no processes, no timers) -------------------------


def _paired(ms: float, *, direct: float = 1.0, cpu: float = 1.0) -> gateway_load.Paired:
    return gateway_load.Paired(ours_p50=(direct + ms) / 1e3, ours_p99=(direct + 2 * ms) / 1e3,
                               direct_p50=direct / 1e3, direct_p99=direct / 1e3,
                               added_p99=2 * ms / 1e3, reps=10, cpu=cpu / 1e3)


def _gateway_numbers(*, chat_ms: float, cpu_big: float) -> gateway_table.Numbers:
    numbers = gateway_table.Numbers()
    for face in gateway_faces.BY_NAME:
        for turns, cpu in ((40, 1.0), (400, cpu_big)):
            numbers.latency[(face, turns)] = {
                mode: _paired(chat_ms if face == "chat" else 2.0, cpu=cpu)
                for mode in gateway_table.MODES}
            numbers.rps[(face, turns)] = {4: 600.0, 16: 700.0}
        numbers.direct_rps[40] = numbers.direct_rps[400] = {4: 2000.0, 16: 2500.0}
    numbers.litellm = {(face, turns): {mode: _paired(8.0 * turns / 40, cpu=3.0)
                                       for mode in gateway_table.MODES}
                       for face in gateway_faces.BY_NAME for turns in (40, 400)}
    numbers.workers = {1: 300.0, 2: 420.0, 4: 500.0}
    numbers.workers_cpu = {2: {"gateway": 0.003, "emulator": 0.001, "clients": 0.001}}
    numbers.workers_turns = 40
    return numbers


def test_gateway_rows_cover_every_face_size_and_target() -> None:
    rows = gateway_table.rows(_gateway_numbers(chat_ms=1.5, cpu_big=12.0))
    cases = {(r.case, r.size) for r in rows}
    for title in ("Chat", "Messages", "Responses"):
        for size in ("40 turns", "400 turns"):
            for what in ("added latency p50, whole", "added latency p99, stream",
                         "gateway CPU per request, stream", "requests/s, 16 clients"):
                assert (f"{title}: {what}", size) in cases
    by = {(r.case, r.size): r for r in rows}
    # LiteLLM adds 8 ms here: Chat's limit is a quarter (2 ms), the other faces' a third.
    chat = by[("Chat: added latency p50, whole", "40 turns")]
    assert chat.ok is True and chat.floor == pytest.approx(0.008) and "2.00 ms" in chat.target
    # Streamed, Chat's limit is a sixth (issue 45): 1.33 ms, which 1.5 ms misses.
    streamed = by[("Chat: added latency p50, stream", "40 turns")]
    assert streamed.ok is False and "1.33 ms (1/6 of" in streamed.target
    messages = by[("Messages: added latency p50, stream", "40 turns")]
    assert messages.ok is True and "2.67 ms" in messages.target
    cpu = by[("Chat: gateway CPU per request, whole", "40 turns")]
    assert cpu.ok is True and cpu.floor == pytest.approx(0.003)  # LiteLLM's, beside it
    # At 400 turns LiteLLM stands beside us with no target (the targets are at 40 turns).
    big = by[("Messages: added latency p50, whole", "400 turns")]
    assert big.floor == pytest.approx(0.08) and big.ok is None and not big.target
    grown = by[("Responses: gateway CPU per request, whole", "400 turns")]
    assert grown.ok is False and grown.ratio == pytest.approx(12.0)
    assert by[("Chat: requests/s, 4 clients", "40 turns")].ok is True
    workers = by[("Chat: requests/s, serve --workers 2, 4 clients", "40 turns")]
    assert workers.ok is False and workers.ratio == pytest.approx(1.4)
    # 5 ms of CPU per request in all: the machine's cores bound what more workers can give.
    cores = os.cpu_count() or 1
    assert f"{cores} cores allow at most {cores / 0.005:,.0f} req/s" in workers.note
    assert report.text_table(rows)


def test_gateway_rows_miss_when_ours_is_slower_and_say_when_litellm_is_missing() -> None:
    numbers = _gateway_numbers(chat_ms=2.5, cpu_big=9.0)
    rows = gateway_table.rows(numbers)
    by = {(r.case, r.size): r for r in rows}
    assert by[("Chat: added latency p50, whole", "40 turns")].ok is False
    assert by[("Chat: gateway CPU per request, stream", "400 turns")].ok is True
    numbers.litellm = {key: modes for key, modes in numbers.litellm.items()
                       if key[0] != "responses"}
    numbers.litellm_failed = {"responses": "404 Not Found"}
    rows = gateway_table.rows(numbers)
    by = {(r.case, r.size): r for r in rows}
    assert by[("Responses: added latency p50, whole", "40 turns")].ok is None
    assert by[("Messages: added latency p50, whole", "40 turns")].ok is True
    assert rows[-1].ours is None and "404 Not Found" in rows[-1].note
    numbers.litellm, numbers.litellm_failed = "LiteLLM not installed", {}
    rows = gateway_table.rows(numbers)
    by = {(r.case, r.size): r for r in rows}
    assert by[("Messages: added latency p50, whole", "40 turns")].ok is None
    assert "15 ms" in by[("Chat: added latency p50, whole", "40 turns")].target
    assert rows[-1].ours is None and rows[-1].note == "LiteLLM not installed"


def test_litellm_config_routes_every_face_to_the_one_upstream() -> None:
    text = gateway_procs.litellm_config("http://127.0.0.1:9/v1")
    for name, model in gateway_procs.LITELLM_MODELS.values():
        assert f"model_name: {name}\n    litellm_params:\n      model: {model}\n" in text
    assert text.count("api_base: http://127.0.0.1:9/v1\n") == len(
        set(gateway_procs.LITELLM_MODELS.values()))


def test_gateway_throughput_fails_loudly_instead_of_hanging() -> None:
    from thoughtline.testing import ChatEmulator

    with ChatEmulator("deepseek") as emu, pytest.raises(httpx.HTTPStatusError):
        gateway_load.throughput(emu.base_url + "/no-such-path", b"{}", seconds=0.1,
                                clients=3, headers={})


def test_the_gateway_profile_script_serves_and_measures_a_face() -> None:
    # The profile in docs/benchmarks.md is taken with this script: it must keep running as the
    # benchmark modules it borrows from change.
    import subprocess

    done = subprocess.run([sys.executable, "-m", "benchmarks.gateway_profile", "--faces", "chat",
                           "--questions", "2", "--requests", "3"],
                          cwd=Path(__file__).resolve().parents[1], capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "chat:" in done.stdout and "CPU/request" in done.stdout


@pytest.mark.parametrize("api", ["chat", "responses", "gemini", "bedrock", "anthropic"])
def test_the_instruction_counts_time_cold_and_steady_builds_of_one_body(api: str) -> None:
    # The instruction harness counts a cold build (a new cache) and a steady one (a cache that
    # walked all but the last turns, which arrive as new equal messages): both must be the
    # request the API's benchmark history makes, byte for byte.
    from benchmarks import instructions

    cold = instructions.builder(api)
    steady = instructions.builder(api, steady=True)
    first = cold()
    assert first == steady() == steady() == cold()
    assert orjson.loads(first)  # a whole JSON body
