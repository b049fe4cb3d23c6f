"""Reactive compaction (issue 28 item 2): a "context length exceeded" 4xx compacts once and sends
the turn once more; the summary's request is counted and logged; a second overflow is a clear
``ContextOverflow``. Every API's real wording is one row of ``wordings.OVERFLOW_WORDINGS``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from compaction_support import run

from thoughtline import Session, config
from thoughtline.codecs.openai_chat.rejections import classify
from thoughtline.compaction import AutoCompaction, CompactionSettings
from thoughtline.errors import ContextOverflow
from thoughtline.events import Notice
from thoughtline.requestlog import RequestLog
from thoughtline.store.base import Store
from thoughtline.testing.anthropic_emulator import AnthropicEmulator
from thoughtline.wordings import OVERFLOW_WORDINGS, overflowed

KEY_ENV = "TL_CMP_REACTIVE_KEY"
LIMIT = 3000  # what the emulated model accepts (bytes / 4)

# One real body per row, as users pasted them (sources in each row).
BODIES = {
    "anthropic-prompt-is-too-long": (400, {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 219898 tokens > 200000 maximum"}}),
    "anthropic-input-and-max-tokens-exceed": (400, {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, "
                   "decrease input length or `max_tokens` and try again"}}),
    "openai-context-length-exceeded": (400, {"error": {
        "type": "invalid_request_error", "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model. Please adjust your "
                   "input and try again.", "param": "input"}}),
    "maximum-context-length-is": (400, {"error": {
        "message": "This endpoint's maximum context length is 32768 tokens. However, you "
                   "requested about 42832 tokens (42832 of text input).", "code": 400}}),
    "gemini-input-token-count-exceeds": (400, [{"error": {
        "code": 400, "status": "INVALID_ARGUMENT",
        "message": "The input token count (1200293) exceeds the maximum number of tokens "
                   "allowed (1048576)."}}]),
    "bedrock-input-is-too-long": (400, {"message": "Input is too long for requested model."}),
}


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicEmulator]:
    monkeypatch.setenv(KEY_ENV, "sk-ant-fake-reactive")
    with AnthropicEmulator() as emulator:
        emulator.limit_context(LIMIT)
        yield emulator


@pytest.mark.parametrize("row", [w.id for w in OVERFLOW_WORDINGS])
def test_every_overflow_wording_is_recognised_and_teaches_replay_nothing(row: str) -> None:
    status, body = BODIES[row]
    text = orjson.dumps(body).decode()
    found = overflowed(status, text)
    assert found is not None and found.id == row and found.source
    # wrapped once more, as OpenRouter's metadata.raw does
    assert overflowed(status, orjson.dumps({"error": {"metadata": {"raw": text}}}).decode())
    assert overflowed(500, text) is None  # only a 4xx
    assert classify(status, text, sent=("reasoning_content",), must_echo=False).action == "none"


def test_other_rejections_are_not_overflows() -> None:
    assert overflowed(400, '{"error": {"message": "Unknown parameter: \'reasoning\'."}}') is None
    assert overflowed(400, "maximum context length") is None  # no number: not the wording
    assert overflowed(413, "Request Entity Too Large") is None


def _provider(emu: AnthropicEmulator) -> config.ProviderConfig:
    return replace(config.presets()["anthropic"], base_url=emu.base_url,
                   model="claude-opus-4-5", key_env=KEY_ENV)


def _auto() -> AutoCompaction:
    # The configured window is the model's real one, far above what the emulator accepts: the
    # preflight never fires, so only the provider's 400 can say the conversation is too long.
    return AutoCompaction(CompactionSettings(keep=4))


def test_a_context_length_400_is_recovered_with_one_compaction_and_one_retry(
        anthropic: AnthropicEmulator, store: Store, tmp_path: Path) -> None:
    auto = _auto()
    log = RequestLog(tmp_path / "logs")
    notices: list[str] = []

    async def scenario() -> Session:
        session = Session.create(store, _provider(anthropic), system="Be brief.", log=log)
        for i in range(16):
            async for event in auto.stream(session, f"Note {i}: " + "keep this in mind. " * 40):
                if isinstance(event, Notice):
                    notices.append(event.text)
        await session.aclose()
        return session

    start = len(anthropic.received)
    session = run(scenario())
    sent = anthropic.received[start:]
    rejected = [i for i, r in enumerate(sent) if r.status == 400]
    assert len(rejected) == auto.overflows >= 1
    for i in rejected:  # each: the summary's request, then the same turn once more, accepted
        summary, retry = sent[i + 1], sent[i + 2]
        assert summary.status == 200 and "Summarize" in summary.raw.decode()
        assert retry.status == 200
        last_user = [m for m in retry.body["messages"] if m["role"] == "user"][-1]
        assert last_user == [m for m in sent[i].body["messages"] if m["role"] == "user"][-1]
        assert len(retry.raw) < len(sent[i].raw)
    assert auto.summary_requests == auto.compactions == len(rejected)
    told = [n for n in notices if "rejected the turn as over its context window" in n]
    assert len(told) == len(rejected) and "anthropic-prompt-is-too-long" in told[0]
    assert session.history[-1].role == "assistant"
    assert "Note 15" in orjson.dumps([m.text for m in session.history]).decode()
    # the summary request is logged as such, under the session
    records = list(log.read())
    purposes = [r.get("purpose") for r in records if r["session"] == session.id]
    assert purposes.count("compaction") == len(rejected)
    assert [r["status"] for r in records].count(400) == len(rejected)


def test_a_second_overflow_is_a_clear_error_and_sends_nothing_more(
        anthropic: AnthropicEmulator, store: Store) -> None:
    auto = _auto()

    async def scenario() -> Session:
        session = Session.create(store, _provider(anthropic), system="Be brief.")
        for i in range(6):
            await auto.send(session, f"Note {i}: " + "keep this in mind. " * 40)
        with pytest.raises(ContextOverflow) as raised:
            await auto.send(session, "A message longer than the whole window: " + "x" * LIMIT * 5)
        message = str(raised.value)
        assert "still over claude-opus-4-5's context window after one automatic compaction" \
            in message and "anthropic-prompt-is-too-long" in message
        assert raised.value.status == 400
        await session.aclose()
        return session

    start = len(anthropic.received)
    session = run(scenario())
    sent = anthropic.received[start:]
    assert [r.status for r in sent[-3:]] == [400, 200, 400]  # rejected, summary, retry
    assert len(sent) == 6 + 3 and auto.overflows == 1 and auto.summary_requests == 1
    assert session.history[-1].role == "assistant"  # the refused turn was not stored
