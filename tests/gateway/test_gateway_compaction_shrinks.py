"""A compaction a Responses client asks for shrinks the conversation (issue 46 item 1).

Through the gateway to the DeepSeek emulator: a conversation whose size is one ~60 KB tool output
is compacted by shortening that output (its head and end kept), and the upstream request after
the compaction is measured against the one before; a conversation unchanged since its last
compaction is compacted again without an upstream request; one that cannot get smaller (its
last user message alone is most of it) gets a 400 that says why instead of a compaction that
changes nothing (Codex shows it as "Error running remote compact task: …" and stops, instead of
compacting after every answer).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from responses_face_support import ResponsesAgent, item_json, responses_client
from test_gateway_replay import QUESTIONS
from test_gateway_responses import serving

from thoughtline.testing import ChatEmulator

MODEL = "up/deepseek-v4-pro"
LINE = "row {n:05d}: temperature=21.4C humidity=48% wind=12km/h station=oslo-blindern\n"
BULKY = "".join(LINE.format(n=n) for n in range(800))  # ~60 KB
SHORTENED = "characters of this tool output left out by compaction"


def _bulky_loop(agent: ResponsesAgent, question: str) -> None:
    """One exchange whose tool answered ~60 KB."""
    agent.ask(question)
    agent.step(stream=False)
    (output,) = [i for i in agent.input[-2:] if i["type"] == "function_call_output"]
    output["output"] = BULKY
    agent.step(stream=False)


def _compact(origin: str, agent: ResponsesAgent) -> list[dict[str, Any]]:
    reply = httpx.post(origin + "/v1/responses/compact", timeout=60,
                       json={"model": MODEL, "input": agent.input})
    assert reply.status_code == 200, reply.text
    output = reply.json()["output"]
    assert [i["type"] for i in output][-1] == "compaction"
    return output


def _trigger(agent: ResponsesAgent) -> list[dict[str, Any]]:
    args = agent._args()
    args["input"] = [*agent.input, {"type": "compaction_trigger"}]
    return [item_json(i) for i in agent.client.responses.create(**args).output]


def test_a_60kb_tool_output_is_shortened_and_the_next_request_is_smaller(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with serving(deepseek, tmp_path) as (origin, _):
        agent = ResponsesAgent(responses_client(origin), model=MODEL)
        _bulky_loop(agent, QUESTIONS[0])
        before = len(deepseek.received[-1].raw)  # the answer's request: the output in full
        sent = len(deepseek.received)
        agent.input = _compact(origin, agent)
        assert len(deepseek.received) == sent  # nothing to summarize: no upstream request
        agent.ask("And in Oslo?")
        agent.step(stream=False)
        after = deepseek.received[-1]
    assert all(r.status == 200 for r in deepseek.received)
    print(f"upstream request bytes: before {before}, after {len(after.raw)}")
    assert before > 60_000 and len(after.raw) < before // 2  # the tail: half of before at most
    text = after.raw.decode()
    assert SHORTENED in text
    assert "row 00000" in text and "row 00799" in text  # the head and the end are kept


def test_a_compaction_of_an_unchanged_conversation_costs_no_upstream_request(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with serving(deepseek, tmp_path) as (origin, _):
        agent = ResponsesAgent(responses_client(origin), model=MODEL)
        for question in QUESTIONS:
            _bulky_loop(agent, question)
        sent = len(deepseek.received)
        first = _trigger(agent)
        summaries = len(deepseek.received) - sent
        agent.input = [i for i in agent.input if i.get("role") == "user"] + first
        again = _trigger(agent)  # nothing new since: the stored compaction is reused
        unchanged = len(deepseek.received) - sent
        agent.input = [i for i in agent.input if i.get("role") == "user"] + again
        agent.ask("Thanks!")
        agent.step(stream=False)
        last = deepseek.received[-1].raw.decode()
    assert summaries == 1 and unchanged == 1  # the second compaction sent nothing upstream
    assert [i["type"] for i in again] == ["compaction"]
    assert "compacted" in last  # the checkpoint the reused compaction names


def test_a_conversation_that_cannot_shrink_gets_a_400_that_says_why(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with serving(deepseek, tmp_path) as (origin, _):
        agent = ResponsesAgent(responses_client(origin), model=MODEL)
        agent.ask("Read this and tell me what it says:\n" + BULKY)  # the one user message
        with pytest.raises(openai.BadRequestError) as refused:
            _trigger(agent)
        endpoint = httpx.post(origin + "/v1/responses/compact", timeout=60,
                              json={"model": MODEL, "input": agent.input})
    assert refused.value.code == "compaction_cannot_shrink"
    assert "cannot be compacted below the ~" in refused.value.message
    assert "no cut point" in refused.value.message
    assert endpoint.status_code == 400
    assert endpoint.json()["error"]["code"] == "compaction_cannot_shrink"
    assert deepseek.received == []  # and nothing was sent upstream for it
