"""End to end on Bedrock: multi-turn tool-calling sessions through ``Session`` and the real CLI
against the loopback Bedrock emulator, before and after ``chat -r`` in a fresh process.

The emulator enforces each model family's documented replay rules (it refuses with the real
wording), so "accepted on every request" is the first check; the second is that each model
received exactly what its policy allows (docs/providers.md "Bedrock"; sources in
routes/bedrock.toml).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bedrock.aws_env import KEYS, fake_aws
from fallback_e2e.fallback_e2e_support import (
    LOOKUP,
    answer_call,
    cli_ok,
    create,
    resume,
    send,
    store_at,
)
from thoughtline.config import ProviderConfig
from thoughtline.testing.bedrock_emulator import REDACTION_TRIGGER, BedrockEmulator
from thoughtline.testing.server import Received

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture
def emu(monkeypatch: pytest.MonkeyPatch) -> Iterator[BedrockEmulator]:
    fake_aws(monkeypatch)  # botocore signs with these; the CLI subprocess inherits them
    with BedrockEmulator(region="us-east-1", credentials=KEYS) as emulator:
        yield emulator


def _provider(emu: BedrockEmulator, model: str) -> ProviderConfig:
    return ProviderConfig(id="bedrock", api="bedrock", base_url=emu.endpoint_url, model=model,
                          auth="sigv4:bedrock", region="us-east-1")


def _reasoning(record: Received) -> list[list[dict[str, Any]]]:
    """Per assistant message of one request: its reasoningContent blocks."""
    return [[b["reasoningContent"] for b in m["content"] if "reasoningContent" in b]
            for m in record.body["messages"] if m["role"] == "assistant"]


def _session_run(emu: BedrockEmulator, home: Path, model: str, first: str) -> str:
    """Two tool loops through the library, then one more question through ``chat -r`` in a new
    process, then the loop answered from a resumed library session. Returns the session id."""
    store = store_at(home)
    session = create(store, _provider(emu, model), tools=[LOOKUP], title=model)
    outcomes = [send(session, first),
                send(session, answer_call(session, "sunny"), stream=False),
                send(session, "and in Rome?", stream=False),
                send(session, answer_call(session, "rain"))]
    assert [o.error for o in outcomes] == [None] * 4
    store.close()
    result = cli_ok(home, "chat", "-r", session.id, "-p", "and in Oslo?")
    assert "lookup" in result.stdout, result.stdout
    resumed = resume(store_at(home), session.id)
    assert send(resumed, answer_call(resumed, "snow")).error is None
    assert send(resumed, "thanks", stream=False).error is None
    return session.id


def _check_accepted(emu: BedrockEmulator) -> None:
    assert [r.status for r in emu.received] == [200] * 7
    assert all(r.headers["authorization"].startswith("AWS4-HMAC-SHA256 ") for r in emu.received)
    assert [r.path.rsplit("/", 1)[-1] for r in emu.received] == [
        "converse-stream", "converse", "converse", "converse-stream", "converse-stream",
        "converse-stream", "converse"]


def test_claude_signed_thinking_goes_back_verbatim_on_every_turn(emu: BedrockEmulator,
                                                                 tmp_path: Path) -> None:
    _session_run(emu, tmp_path, CLAUDE, "weather in Paris")
    _check_accepted(emu)
    last = _reasoning(emu.received[-1])
    assert len(last) == 6 and all(len(blocks) == 1 for blocks in last)
    for blocks in last:
        item = blocks[0]["reasoningText"]
        assert set(item) == {"text", "signature"}
        assert emu.values.signature_ok(CLAUDE, item["text"], item["signature"])


def test_claude_redacted_thinking_goes_back_verbatim(emu: BedrockEmulator,
                                                     tmp_path: Path) -> None:
    _session_run(emu, tmp_path, CLAUDE, f"{REDACTION_TRIGGER} weather in Paris")
    _check_accepted(emu)
    last = _reasoning(emu.received[-1])
    assert len(last) == 6
    assert all(list(blocks[0]) == ["redactedContent"] for blocks in last)
    assert {blocks[0]["redactedContent"] for blocks in last} == {emu.values.claude_redacted(
        CLAUDE)}


def test_deepseek_r1_never_receives_reasoning(emu: BedrockEmulator, tmp_path: Path) -> None:
    _session_run(emu, tmp_path, "us.deepseek.r1-v1:0", "weather in Paris")
    _check_accepted(emu)
    assert all(blocks == [] for r in emu.received for blocks in _reasoning(r))


def test_gpt_oss_receives_readable_text_without_a_signature(emu: BedrockEmulator,
                                                            tmp_path: Path) -> None:
    _session_run(emu, tmp_path, "openai.gpt-oss-120b-1:0", "weather in Paris")
    _check_accepted(emu)
    last = _reasoning(emu.received[-1])
    assert len(last) == 6
    assert all(b == [{"reasoningText": {"text": b[0]["reasoningText"]["text"]}}] for b in last)


def test_gpt56_receives_only_its_own_redacted_content(emu: BedrockEmulator,
                                                      tmp_path: Path) -> None:
    model = "us.openai.gpt-5.6-luna"
    _session_run(emu, tmp_path, model, "weather in Paris")
    _check_accepted(emu)
    last = _reasoning(emu.received[-1])
    assert len(last) == 6
    assert all(b == [{"redactedContent": emu.values.encrypted(model, "")}] for b in last)


def test_an_application_profile_learns_its_wrapped_models_rule_once(
        emu: BedrockEmulator, tmp_path: Path) -> None:
    # The ARN says nothing about the model: the first replay of its reasoning is refused with
    # DeepSeek-R1's documented wording, learned once, retried once, and never sent again.
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/r1wrap"
    emu.wraps[arn] = "deepseek.r1-v1:0"
    store = store_at(tmp_path)
    session = create(store, _provider(emu, arn), tools=[LOOKUP])
    first = send(session, "weather in Paris")
    second = send(session, answer_call(session, "sunny"))
    assert first.error is None and second.error is None
    assert len(second.notices) == 1 and "reasoningContent" in second.notices[0]
    assert [r.status for r in emu.received] == [200, 400, 200]
    assert _reasoning(emu.received[1]) != [[]] and _reasoning(emu.received[2]) == [[]]
    store.close()
    again = resume(store_at(tmp_path), session.id)
    assert send(again, "and in Rome?").error is None
    assert [r.status for r in emu.received[3:]] == [200]
    assert all(blocks == [] for blocks in _reasoning(emu.received[-1]))
