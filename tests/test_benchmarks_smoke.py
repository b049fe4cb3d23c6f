"""The benchmarks time the bytes we actually send: tiny sizes, no timers, no timing assertions.

Each scenario's measured path is run once on a small input and checked against what the product
does (the session's request, the stored history, the folded turn), so a benchmark can never
drift into timing a body we would not send.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``benchmarks`` is a top-level package beside ``src``

from benchmarks import report, request_build, resume, store_append, stream_fold, synth  # noqa: E402
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
