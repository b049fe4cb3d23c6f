"""Issue 14, done when: a tool-calling conversation on the Responses emulator (reasoning item →
function call → result → answer) is accepted on every request before and after ``chat -r`` in a
fresh process, with every reasoning item byte-identical and in place; a forced
``invalid_encrypted_content`` is repaired with one retry dropping only the offending item.

Everything runs through the public ``Session`` and the real ``thoughtline`` entry point; what
went on the wire is read from the emulator's record of raw request bodies, compared as bytes.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from responses_support import (
    LOOKUP,
    answer_calls,
    cli,
    done_of,
    in_place,
    notices,
    provider_at,
    raw_contains,
    reasoning_in,
    reject_next_item,
    store_at,
    turn,
)

from thoughtline.messages import Reasoning, Text
from thoughtline.session import Session
from thoughtline.testing.responses_emulator import ResponsesEmulator


def every_issued_item_replayed_verbatim(emu: ResponsesEmulator) -> None:
    """Each request after the answer that issued an item carries it byte for byte, in place."""
    issued = list(emu.issued_items)
    records = emu.received
    for index, record in enumerate(records):
        assert record.status == 200, (index, record.body)
        assert in_place(record)
        sent = reasoning_in(record)
        earlier = issued[: len(sent)]
        assert [orjson.dumps(i) for i in sent] == [orjson.dumps(i) for i in earlier], index
        assert all(raw_contains(record, item) for item in earlier)
        assert record.body["store"] is False
        assert record.body["include"] == ["reasoning.encrypted_content"]
    assert len(issued) == len(records)  # one reasoning item per answer


def assistant_messages(emu: ResponsesEmulator) -> list[dict]:
    last = emu.received[-1].body["input"]
    return [i for i in last if i.get("type") == "message"]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_tool_loop_replays_every_item_in_place(emu: ResponsesEmulator, home: Path,
                                                 stream: bool) -> None:
    session = Session.create(store_at(home), provider_at(emu), tools=[LOOKUP])
    first = done_of(turn(session, "what is the weather in Oslo?", stream=stream))
    assert first.message.tool_calls and first.message.reasoning
    assert first.message.reasoning[0].kind == "encrypted"
    second = done_of(turn(session, answer_calls(first), stream=stream))
    assert "sunny" in second.message.text
    done_of(turn(session, "and tomorrow?", stream=stream))
    every_issued_item_replayed_verbatim(emu)
    # phase went back on every assistant message, as the model sent it
    assert [m.get("phase") for m in assistant_messages(emu)] == ["commentary", "final_answer"]


def test_chat_resume_in_a_fresh_process_keeps_every_item(emu: ResponsesEmulator,
                                                          home: Path) -> None:
    session = Session.create(store_at(home), provider_at(emu), tools=[LOOKUP])
    first = done_of(turn(session, "what is the weather in Oslo?"))
    done_of(turn(session, answer_calls(first)))
    before = len(emu.received)

    result = cli(home, "chat", "-r", session.id, "-p", "and in Bergen?", "--json")
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["session"] == session.id and reply["reply"]["tool_calls"]
    assert len(emu.received) == before + 1

    resumed = Session.resume(store_at(home), session.id)
    call = resumed.history[-1]
    assert call.tool_calls  # the fresh process stored its turn, reasoning item included
    assert isinstance(call.parts[0], Reasoning) and call.parts[0].complete
    done_of(turn(resumed, answer_calls(call, "rain")))
    result = cli(home, "chat", "-r", session.id, "-p", "thanks", "--json")
    assert result.returncode == 0, result.stderr
    every_issued_item_replayed_verbatim(emu)
    assert len(emu.received) == before + 3


def test_a_rejected_item_is_repaired_with_one_retry_dropping_only_it(
        emu: ResponsesEmulator, home: Path) -> None:
    session = Session.create(store_at(home), provider_at(emu), tools=[LOOKUP])
    first = done_of(turn(session, "what is the weather in Oslo?"))
    done_of(turn(session, answer_calls(first)))
    second = done_of(turn(session, "and in Bergen?"))
    assert len(emu.issued_items) == 3
    victim = emu.issued_items[1]
    reject_next_item(emu, victim)
    before = len(emu.received)
    events = turn(session, answer_calls(second, "snow"))
    done = done_of(events)
    assert "snow" in done.message.text
    assert len(emu.received) == before + 2  # the rejected request and exactly one retry
    rejected, retry = emu.received[-2:]
    assert rejected.status == 400 and retry.status == 200
    kept = [i for i in emu.issued_items[:3] if i is not victim]
    assert [orjson.dumps(i) for i in reasoning_in(retry)] == [orjson.dumps(i) for i in kept]
    assert len(reasoning_in(rejected)) == 3
    assert notices(events) and "1 replayed reasoning item" in notices(events)[0]
    assert in_place(retry)

    # learned for good: a fresh process never sends that item again, and sends all the others
    result = cli(home, "chat", "-r", session.id, "-p", "thanks", "--json")
    assert result.returncode == 0, result.stderr
    last = emu.received[-1]
    assert last.status == 200
    assert not raw_contains(last, victim["encrypted_content"])
    assert len(reasoning_in(last)) == len(emu.issued_items) - 2  # all but the victim and itself
    stored = Session.resume(store_at(home), session.id)
    assert len(stored.fingerprints) == 1
    assert any(p.native for p in stored.history[3].parts if isinstance(p, Reasoning))


def test_an_interrupted_stream_is_kept_but_its_item_never_replayed(emu: ResponsesEmulator,
                                                                    home: Path) -> None:
    session = Session.create(store_at(home), provider_at(emu), tools=[LOOKUP])
    emu.cut_stream_after(4)  # created, in_progress, reasoning added, a summary part
    with pytest.raises(Exception):  # noqa: B017 - the stream broke: any provider/protocol error
        turn(session, "what is the weather in Oslo?")
    partial = session.history[-1]
    assert partial.role == "assistant" and partial.incomplete
    assert all(not p.complete for p in partial.reasoning)
    done = done_of(turn(session, "try again"))
    assert done.message.tool_calls
    assert emu.received[-1].status == 200 and reasoning_in(emu.received[-1]) == []


def test_routes_explains_that_chat_completions_carries_no_openai_reasoning(home: Path) -> None:
    result = cli(home, "routes", "--provider", "openai")
    assert result.returncode == 0, result.stderr
    assert "carries no OpenAI reasoning" in result.stdout
    assert "openai-responses" in result.stdout
    data = json.loads(cli(home, "routes", "--provider", "openai-responses", "--json").stdout)
    assert data["api"] == "openai-responses" and data["route"] == "openai"
    assert data["body_extras"]["store"] is False


def test_the_text_of_a_turn_keeps_its_phase_through_the_store(emu: ResponsesEmulator,
                                                              home: Path) -> None:
    session = Session.create(store_at(home), provider_at(emu), tools=[LOOKUP])
    done_of(turn(session, "what is the weather in Oslo?"))
    stored = Session.resume(store_at(home), session.id).history[-1]
    text = next(p for p in stored.parts if isinstance(p, Text))
    assert text.native["openai-responses"]["item"]["phase"] == "commentary"


def test_a_refused_switch_is_learned_once_and_kept_after_resume(emu: ResponsesEmulator,
                                                                home: Path) -> None:
    session = Session.create(store_at(home), provider_at(emu), tools=[LOOKUP])
    # What a Responses-compatible server without the include switch answers
    # (the recorded unknown-parameter wording: errors/vercel-openai-unknown-parameter-*.json).
    emu.fail_next(400, {"error": {"message": "Unknown parameter: 'include'.",
                                  "type": "invalid_request_error", "param": "include",
                                  "code": "unknown_parameter"}})
    events = turn(session, "what is the weather in Oslo?")
    first = done_of(events)
    assert notices(events) and "include" in notices(events)[0]
    rejected, retry = emu.received
    assert "include" in rejected.body and "include" not in retry.body
    assert retry.body["store"] is False  # only the refused switch went
    done_of(turn(session, answer_calls(first)))
    result = cli(home, "chat", "-r", session.id, "-p", "thanks", "--json")
    assert result.returncode == 0, result.stderr
    assert all("include" not in r.body for r in emu.received[1:])
    assert [r.status for r in emu.received] == [400, 200, 200, 200]


def test_xai_unnamed_rejection_drops_the_stale_items_only(home: Path) -> None:
    with ResponsesEmulator("xai") as xai:
        provider = replace(provider_at(xai, model="grok-4"), id="xai-responses")
        session = Session.create(store_at(home), provider, tools=[LOOKUP])
        first = done_of(turn(session, "what is the weather in Oslo?"))
        done_of(turn(session, answer_calls(first)))
        second = done_of(turn(session, "and in Bergen?"))  # a new tool loop starts here
        stale, current = xai.issued_items[:2], xai.issued_items[2]  # the first loop's, this one
        # xAI names no item (hermes-agent #32617)
        xai.fail_next(400, {"error": {
            "message": "Could not decrypt the provided encrypted_content. Ensure the value is "
                       "the unmodified encrypted_content from a previous response.",
            "type": "invalid_request_error"}})
        events = turn(session, answer_calls(second, "snow"))
        assert "snow" in done_of(events).message.text and notices(events)
        rejected, retry = xai.received[-2:]
        assert [r.status for r in (rejected, retry)] == [400, 200]
        sent = [orjson.dumps(i) for i in reasoning_in(retry)]
        assert len(reasoning_in(rejected)) == 3
        assert sent == [orjson.dumps(current)]  # the current tool loop's item stays
        assert not any(orjson.dumps(i) in sent for i in stale)
        assert all("phase" not in i for i in retry.body["input"] if i.get("type") == "message")
