"""``chat -r`` in a fresh ``thoughtline`` process continues an Anthropic session: every stored
block reaches the emulator byte for byte and is accepted, and a signature repaired earlier is
never sent again. The emulator (in this process) is the witness.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from anthropic_support import (
    KEYS,
    ROUTE,
    assistant_contents,
    collect,
    issued,
    new_session,
    run,
    signatures,
    tool_conversation,
)
from cli_support import Cli

import thoughtline
from thoughtline import open_store
from thoughtline.codecs.anthropic import part_fingerprint
from thoughtline.messages import Reasoning
from thoughtline.testing.anthropic_emulator import AnthropicEmulator

MODEL = "claude-opus-4-5"
SRC = str(Path(thoughtline.__file__).resolve().parents[1])  # this checkout's code, in the child


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path, env={**KEYS, "PYTHONPATH": SRC})


@pytest.mark.parametrize("route", ["direct", "bedrock"])
def test_chat_resume_in_a_fresh_process_replays_every_block(
        emu: AnthropicEmulator, tmp_path: Path, cli: Cli, route: str) -> None:
    session = new_session(tmp_path, ROUTE[route].provider(emu, MODEL))
    answered = len(emu.answers)
    run(tool_conversation(session))
    mark = len(emu.received)
    out = cli.json("chat", "-r", session.id, "-p", "Thanks, and Berlin?", "--json")
    assert out["session"] == session.id
    [request] = emu.received[mark:]
    assert request.status == 200
    assert assistant_contents(request) == issued(emu, answered, 4)
    if route == "bedrock":
        assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256")


def test_a_repaired_signature_stays_repaired_in_a_fresh_process(
        emu: AnthropicEmulator, tmp_path: Path, cli: Cli) -> None:
    session = new_session(tmp_path, ROUTE["direct"].provider(emu, MODEL))
    first = run(tool_conversation(session))[0].message
    rejected = next(p for p in first.parts if isinstance(p, Reasoning))
    emu.fail_next(400, {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "messages.1.content.0: Invalid `signature` in `thinking` block"}})
    run(collect(session, "One more"))
    mark = len(emu.received)
    cli.json("chat", "-r", session.id, "-p", "And the last one", "--json")
    [request] = emu.received[mark:]  # one request: the repair is not relearned
    assert request.status == 200 and rejected.signature not in signatures(request)
    assert part_fingerprint(rejected) in cli.show(session.id)["fingerprints"]  # shown
    [record] = cli.log_records()  # the child's one request, logged with what it carried
    assert record["api"] == "anthropic" and record["status"] == 200
    assert record["blocks"]["thinking"] == len(signatures(request)) - 2  # two redacted blocks


def test_a_one_shot_chat_through_the_preset_then_resume(emu: AnthropicEmulator, cli: Cli) -> None:
    mark, answered = len(emu.received), len(emu.answers)
    first = cli.json("chat", "--provider", "anthropic", "--base-url", emu.base_url, "--model",
                     "claude-fable-5-1", "--api-key-env", "TL_TEST_ANTHROPIC_KEY", "-p",
                     "Think, then say what 17*23 is.", "--json")
    cli.json("chat", "-r", first["session"], "-p", "And times two?", "--json")
    one, two = emu.received[mark:]
    assert (one.status, two.status) == (200, 200)
    assert one.headers["x-api-key"] == "sk-ant-test"
    assert assistant_contents(two) == issued(emu, answered, 1)  # the empty-text block, as issued
    assert orjson.loads(assistant_contents(two)[0])[0]["thinking"] == ""


def test_chat_recovers_from_prompt_is_too_long_with_one_compaction_and_one_retry(
        emu: AnthropicEmulator, tmp_path: Path, cli: Cli) -> None:
    # issue 28 item 2, the CLI path: the model's known window is far above what the emulated
    # model accepts, so only the provider's 400 can say the conversation is too long.
    session = new_session(tmp_path, ROUTE["direct"].provider(emu, MODEL), tools=())
    for i in range(8):
        run(collect(session, f"Note {i}: " + "keep this in mind. " * 40))
    size = len(emu.received[-1].raw) // 4
    mark = len(emu.received)
    emu.limit_context(size)  # the next turn is over the limit, a compacted one is not
    try:
        out = cli.json("chat", "-r", session.id, "-p", "What did I ask you to keep?", "--json")
    finally:
        emu.limit_context(None)
    assert out["session"] == session.id
    rejected, summary, retry = emu.received[mark:]
    assert rejected.status == 400 and summary.status == 200 and retry.status == 200
    assert b"prompt is too long" not in retry.raw and len(retry.raw) < len(rejected.raw)
    records = cli.log_records()
    assert [r["status"] for r in records] == [400, 200, 200]
    assert [r.get("purpose") for r in records] == [None, "compaction", None]
    store = open_store(None, tmp_path)
    try:  # the compaction kept the previous history as a generation
        assert len(store.list_generations(session.id)) == 2
    finally:
        store.close()
