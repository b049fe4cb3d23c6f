"""Reactive compaction in the gateway (issue 28 item 2): a turn the upstream rejects as over its
context window is compacted once (one summary request, logged with ``purpose: "compaction"``)
and sent once more; the client gets its answer. A second overflow is the client's clear 400."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from gateway_support import SESSION_HEADER, running_gateway

from thoughtline.requestlog import RequestLog
from thoughtline.testing.anthropic_emulator import AnthropicEmulator

MODEL = "claude-sonnet-4-5"


@pytest.fixture
def anthropic() -> Iterator[AnthropicEmulator]:
    with AnthropicEmulator() as emu:
        yield emu


def _conversation(turns: int) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "Be brief."}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"Note {i}: " + "keep this in mind. " * 40})
        messages.append({"role": "assistant", "content": f"Noted {i}."})
    return messages


@pytest.mark.parametrize("stream", [False, True])
def test_an_overflowing_turn_is_compacted_once_and_sent_once_more(
        anthropic: AnthropicEmulator, tmp_path: Path, stream: bool) -> None:
    messages = [*_conversation(12), {"role": "user", "content": "What did I ask you to keep?"}]
    with running_gateway(anthropic, tmp_path, name="up", provider="anthropic",
                         model=MODEL) as gw:
        anthropic.limit_context(1800)  # the whole conversation is ~2,600 tokens on the wire
        client = gw.client()
        if stream:
            pieces = client.chat.completions.create(model=f"up/{MODEL}", messages=messages,
                                                    stream=True)
            text = "".join(c.choices[0].delta.content or "" for c in pieces if c.choices)
        else:
            raw = client.chat.completions.with_raw_response.create(model=f"up/{MODEL}",
                                                                  messages=messages)
            text = raw.parse().choices[0].message.content or ""
            # the session keeps the client's turns as sent, not the compacted request
            stored = [s.message for s in
                      gw.store.load_history(raw.headers[SESSION_HEADER]).messages]
            assert [m.text for m in stored[1:-1]] == [m["content"] for m in messages[1:]]
            assert stored[-1].role == "assistant" and stored[-1].text == text
    assert text
    rejected, summary, retry = anthropic.received
    assert (rejected.status, summary.status, retry.status) == (400, 200, 200)
    assert len(retry.raw) < len(rejected.raw) and b"Summarize" in summary.raw
    # the client's last question went out unchanged, after the summary of the head
    assert retry.body["messages"][-1] == rejected.body["messages"][-1]
    records = list(RequestLog(tmp_path / "logs").read())
    assert [r["status"] for r in records] == [400, 200, 200]
    assert [r.get("purpose") for r in records] == [None, "compaction", None]


def test_a_second_overflow_is_a_clear_error(anthropic: AnthropicEmulator,
                                            tmp_path: Path) -> None:
    messages = [*_conversation(10), {"role": "user", "content": "x" * 12000}]
    with running_gateway(anthropic, tmp_path, name="up", provider="anthropic",
                         model=MODEL) as gw:
        anthropic.limit_context(2500)  # the last message alone is over the limit
        with pytest.raises(openai.BadRequestError) as raised:
            gw.client().chat.completions.create(model=f"up/{MODEL}", messages=messages)
    assert "context window" in str(raised.value)
    assert [r.status for r in anthropic.received] == [400, 200, 400]


def test_a_conversation_whose_recent_turns_are_most_of_it_is_still_saved(
        anthropic: AnthropicEmulator, tmp_path: Path) -> None:
    """The retained tail is bounded by tokens, not by a count of messages: with the last eight
    messages kept whole, this conversation could not get under the window the rejection
    proved (issue 46 item 1's bounded tail, for the reactive path too)."""
    messages = [*_conversation(5), {"role": "user", "content": "What did I ask you to keep?"}]
    with running_gateway(anthropic, tmp_path, name="up", provider="anthropic",
                         model=MODEL) as gw:
        anthropic.limit_context(900)  # ~1,150 tokens sent; the last 8 messages are ~850
        answer = gw.client().chat.completions.create(model=f"up/{MODEL}", messages=messages)
    assert answer.choices[0].message.content
    rejected, summary, retry = anthropic.received
    assert (rejected.status, summary.status, retry.status) == (400, 200, 200)
    assert retry.body["messages"][-1] == rejected.body["messages"][-1]
