"""DeepSeek's native ``/responses`` (the ``deepseek-responses`` preset;
api-docs.deepseek.com/guides/thinking_mode): stateless, no encrypted reasoning — its thinking goes
back as a ``reasoning`` item whose ``content`` is the ``reasoning_text`` it gave ("The
`reasoning_text` in the thinking mode must be passed back to the API": api-docs.deepseek.com
thinking mode, lidge-jun/opencodex #1594), and nothing it does not read (its ``encrypted_content``
is "<response id>-<n>", a reference to nothing kept). Effort goes through as given, up to ``max``.

A two-turn tool loop through the public ``Session`` on the Responses emulator's ``deepseek``
personality, read back from the emulator's record of raw request bodies.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from responses_support import (
    KEY_ENV,
    LOOKUP,
    answer_calls,
    done_of,
    raw_contains,
    reasoning_in,
    store_at,
    turn,
)

from thoughtline.config import ProviderConfig
from thoughtline.session import Session
from thoughtline.testing.responses_emulator import ResponsesEmulator

WORDING = "The `reasoning_text` in the thinking mode must be passed back to the API."
READ = ("type", "id", "summary", "content")  # the fields of the recorded accepted replay


@pytest.fixture
def deepseek() -> Iterator[ResponsesEmulator]:
    with ResponsesEmulator("deepseek") as emulator:
        yield emulator


def _at(emu: ResponsesEmulator) -> ProviderConfig:
    """The ``deepseek-responses`` preset's route, pointed at the emulator (the id is kept)."""
    return ProviderConfig(id="deepseek-responses", api="openai-responses",
                          base_url=emu.base_url, key_env=KEY_ENV, model="deepseek-v4-pro")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_tool_loop_passes_the_reasoning_text_back_as_deepseek_gave_it(
        deepseek: ResponsesEmulator, home: Path, stream: bool) -> None:
    session = Session.create(store_at(home), _at(deepseek), tools=[LOOKUP],
                             params={"reasoning_effort": "max"})
    assert session.route.row == "deepseek"
    first = done_of(turn(session, "what is the weather in Oslo?", stream=stream))
    assert first.message.tool_calls and first.message.reasoning
    second = done_of(turn(session, answer_calls(first), stream=stream))
    assert "sunny" in second.message.text
    asked, answered = deepseek.received
    assert (asked.status, answered.status) == (200, 200)

    issued = deepseek.issued_items[0]
    assert issued["encrypted_content"].endswith("-0")  # DeepSeek's reference, not a sealed value
    sent = reasoning_in(answered)
    assert len(sent) == 1
    # the reasoning_text exactly as DeepSeek returned it, byte for byte
    assert orjson.dumps(sent[0]["content"]) == orjson.dumps(issued["content"])
    assert raw_contains(answered, issued["content"])
    # and nothing DeepSeek does not read: the item is the issued one less those fields
    assert orjson.dumps(sent[0]) == orjson.dumps({k: v for k, v in issued.items() if k in READ})
    assert issued["encrypted_content"].encode() not in answered.raw
    # the reasoning heads its turn: right after the question, before the call it led to
    kinds = [i.get("type") or i.get("role") for i in answered.body["input"]]
    assert kinds == ["user", "reasoning", "message", "function_call", "function_call_output"]
    for record in (asked, answered):  # stateless by design: no switches; effort as given
        assert "store" not in record.body and "include" not in record.body
        assert record.body["reasoning"] == {"effort": "max"}


def test_the_emulator_refuses_a_tool_turn_without_its_reasoning_text(
        deepseek: ResponsesEmulator, home: Path) -> None:
    session = Session.create(store_at(home), _at(deepseek), tools=[LOOKUP])
    first = done_of(turn(session, "what is the weather in Oslo?", stream=False))
    done_of(turn(session, answer_calls(first), stream=False))
    accepted = deepseek.received[-1].body
    without = {**accepted, "input": [i for i in accepted["input"]
                                     if i.get("type") != "reasoning"]}
    emptied = {**accepted, "input": [{**i, "content": []} if i.get("type") == "reasoning" else i
                                     for i in accepted["input"]]}
    headers = {"authorization": "Bearer sk-fake", "content-type": "application/json"}
    for body in (without, emptied):
        response = httpx.post(f"{deepseek.base_url}/responses", content=orjson.dumps(body),
                              headers=headers)
        assert response.status_code == 400
        assert response.json()["error"]["message"] == WORDING
    again = httpx.post(f"{deepseek.base_url}/responses", content=orjson.dumps(accepted),
                       headers=headers)
    assert again.status_code == 200
