"""Rehydration edges through the real gateway (issue 47 item 1), each test able to fail on one
named bug: what the client shows decides (its edit of a turn found by a minted reference wins),
visible content is compared after normalization (end whitespace, argument key order) and not
before a real change, a named session scopes the lookup, a compaction item's expansion keeps the
turns after it lined up with their minted references.

The upstream is the DeepSeek-personality emulator (it answers with ``reasoning_content``, which a
Chat client drops and the gateway must put back); what reached it is read as bytes.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gateway_support import MODEL, SESSION_HEADER, running_gateway, tool_output
from responses_face_support import ResponsesAgent, responses_client
from test_gateway_responses import serving

from thoughtline.testing import ChatEmulator

#: Two properties: the emulator's call carries both, so their order can be changed.
TOOLS = [{"type": "function", "function": {
    "name": "weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "kelvin"]}},
        "required": ["city", "unit"]}}}]


def _chat(origin: str, messages: list[dict[str, Any]],
          headers: dict[str, str] | None = None) -> httpx.Response:
    answer = httpx.post(origin + "/v1/chat/completions", timeout=60, headers=headers or {},
                        json={"model": MODEL, "messages": messages, "tools": TOOLS})
    assert answer.status_code == 200, answer.text
    return answer


def _loop(origin: str, question: str,
          headers: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], list[str], str]:
    """One question answered through a tool call, as a Chat client keeps it (no reasoning):
    (the client's messages, the reasoning each answer showed, the session)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    shown: list[str] = []
    session = ""
    for _ in range(2):
        reply = _chat(origin, messages, headers)
        session = reply.headers[SESSION_HEADER]
        message = reply.json()["choices"][0]["message"]
        shown.append(message["reasoning_content"])
        kept = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            kept["tool_calls"] = message["tool_calls"]
        messages.append(kept)
        for call in message.get("tool_calls") or ():
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": tool_output(call["function"]["arguments"])})
    assert messages[1].get("tool_calls") and not messages[3].get("tool_calls")
    assert all(shown)
    return messages, shown, session


def _sent_reasoning(body: dict[str, Any]) -> list[str | None]:
    return [m.get("reasoning_content") for m in body["messages"] if m["role"] == "assistant"]


# --- visible-content normalization --------------------------------------------------------------


def test_end_whitespace_and_argument_key_order_still_match(deepseek: ChatEmulator,
                                                           tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        origin = gw.server.origin
        messages, shown, _ = _loop(origin, "Weather in Paris?")
        call = messages[1]["tool_calls"][0]["function"]
        arguments = orjson.loads(call["arguments"])
        assert len(arguments) == 2  # both properties: their order can change
        resent = copy.deepcopy(messages)
        # a client that re-serializes the arguments (keys reversed, spaced) and keeps the text
        # with a newline and blanks at its end
        resent[1]["tool_calls"][0]["function"]["arguments"] = orjson.dumps(
            dict(reversed(list(arguments.items())))).decode().replace(",", ", ")
        resent[3]["content"] = messages[3]["content"] + "\n  \t"
        before = len(deepseek.received)
        _chat(origin, [*resent, {"role": "user", "content": "Thanks!"}])
    first = deepseek.received[before]  # the turn's first request
    assert first.status == 200
    assert _sent_reasoning(first.body) == shown  # both turns found and put back


def test_a_real_change_of_arguments_or_text_is_the_clients_own_turn(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        origin = gw.server.origin
        messages, shown, _ = _loop(origin, "Weather in Paris?")
        call = messages[1]["tool_calls"][0]["function"]
        arguments = orjson.loads(call["arguments"])
        edited = copy.deepcopy(messages)
        edited[1]["tool_calls"][0]["function"]["arguments"] = orjson.dumps(
            {**arguments, "city": "Lyon"}).decode()
        edited[3]["content"] = messages[3]["content"] + " (edited)"
        before = len(deepseek.received)
        httpx.post(origin + "/v1/chat/completions", timeout=60, json={
            "model": MODEL, "tools": TOOLS,
            "messages": [*edited, {"role": "user", "content": "Thanks!"}]})
    first = deepseek.received[before]
    assistants = [m for m in first.body["messages"] if m["role"] == "assistant"]
    # what the client shows went upstream, not the stored turns it edited
    assert orjson.loads(assistants[0]["tool_calls"][0]["function"]["arguments"])["city"] == \
        "Lyon"
    assert assistants[1]["content"] == edited[3]["content"]
    for thought in shown:
        assert orjson.dumps(thought)[1:-1] not in first.raw


# --- a named session scopes the lookup ----------------------------------------------------------


def test_a_named_session_does_not_rehydrate_another_sessions_turns(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        origin = gw.server.origin
        a_messages, a_shown, a_session = _loop(origin, "Weather in Paris?")
        _, _, b_session = _loop(origin, "Weather in Rome?")
        assert a_session != b_session
        follow = [*a_messages, {"role": "user", "content": "Thanks!"}]
        sent: dict[str, bytes] = {}
        for name, session in (("own", a_session), ("other", b_session)):
            before = len(deepseek.received)
            httpx.post(origin + "/v1/chat/completions", timeout=60,
                       headers={SESSION_HEADER: session},
                       json={"model": MODEL, "messages": follow, "tools": TOOLS})
            sent[name] = deepseek.received[before].raw
    for thought in a_shown:  # named A: A's turns are found; named B: they are not
        assert orjson.dumps(thought)[1:-1] in sent["own"]
        assert orjson.dumps(thought)[1:-1] not in sent["other"]


def test_a_clients_session_id_scopes_the_lookup(deepseek: ChatEmulator, tmp_path: Path) -> None:
    # Responses face: the client's own ``session-id`` header names its conversation.
    with serving(deepseek, tmp_path) as (origin, _):
        agents = {}
        for name, question in (("a", "What's the weather in Paris?"),
                               ("b", "What's the weather in Rome?")):
            agent = ResponsesAgent(responses_client(origin), model="up/deepseek-v4-pro",
                                   headers={"session-id": name})
            agent.ask(question)
            agent.step(stream=False)
            agent.step(stream=False)
            agents[name] = agent
        a = agents["a"]
        a.ask("Thanks!")
        sent: dict[str, bytes] = {}
        for name in ("a", "b"):
            before = len(deepseek.received)
            a.headers = {"session-id": name}
            a.client.responses.create(**a._args())
            sent[name] = deepseek.received[before].raw
    for thought in a.summaries():
        assert orjson.dumps(thought)[1:-1] in sent["a"]
        assert orjson.dumps(thought)[1:-1] not in sent["b"]


# --- a turn found by its minted reference -------------------------------------------------------


def _answer_text(agent: ResponsesAgent, index: int) -> str:
    (message,) = [i for i in agent.answers[index] if i["type"] == "message"]
    return str(message["content"][0]["text"])


def test_a_clients_edit_of_a_turn_found_by_its_minted_reference_wins(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with serving(deepseek, tmp_path) as (origin, _):
        agent = ResponsesAgent(responses_client(origin), model="up/deepseek-v4-pro")
        agent.ask("What's the weather in Paris?")
        agent.step(stream=False)
        agent.step(stream=False)  # reasoning (a minted value) and the answer's text
        original = _answer_text(agent, 1)
        reasoning = agent.summaries()[1]
        answer = next(i for i in agent.input if i["type"] == "message"
                      and i.get("role") == "assistant")
        assert any(i["type"] == "reasoning" and i["encrypted_content"].startswith("tl1:")
                   for i in agent.answers[1])
        agent.ask("Thanks!")
        sent: dict[str, bytes] = {}
        for name in ("as shown", "edited"):
            if name == "edited":
                answer["content"][0]["text"] = "It is raining in Paris."
            before = len(deepseek.received)
            agent.client.responses.create(**agent._args())
            sent[name] = deepseek.received[before].raw
    assert orjson.dumps(original)[1:-1] in sent["as shown"]
    assert orjson.dumps(reasoning)[1:-1] in sent["as shown"]
    # the edit went upstream as the client wrote it; the stored turn did not come back
    assert b"It is raining in Paris." in sent["edited"]
    assert orjson.dumps(original)[1:-1] not in sent["edited"]
    assert orjson.dumps(reasoning)[1:-1] not in sent["edited"]


# --- the turns after an expanded compaction item ------------------------------------------------


def test_turns_after_a_compaction_item_are_found_by_their_minted_references(
        deepseek: ChatEmulator, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with serving(deepseek, tmp_path) as (origin, _):
        agent = ResponsesAgent(responses_client(origin), model="up/deepseek-v4-pro")
        plain = agent._args

        def instructed() -> dict[str, Any]:  # a leading system message the expansion keeps
            return {**plain(), "instructions": "Answer briefly."}

        agent._args = instructed  # type: ignore[method-assign]
        for question in ("What's the weather in Paris?", "And in Rome?", "And in Oslo?"):
            agent.ask(question)
            agent.step(stream=False)
            agent.step(stream=False)
        compacted = httpx.post(origin + "/v1/responses/compact", timeout=60, json={
            "model": "up/deepseek-v4-pro", "input": agent.input,
            "instructions": "Answer briefly."}).json()
        assert compacted["output"][-1]["type"] == "compaction"
        agent.input = list(compacted["output"])
        agent.ask("And in Lisbon?")
        agent.step(stream=False)
        agent.step(stream=True)
        agent.ask("Thanks!")
        before = len(deepseek.received)
        agent.step(stream=False)
        last = deepseek.received[before]
    # the access log (stderr): how each request's turns were found
    records = [orjson.loads(line) for line in capfd.readouterr().err.splitlines()
               if line.startswith("{") and '"rehydrated_by"' in line]
    # both turns after the compaction item (the Lisbon call and its answer) by their references
    assert records[-1]["rehydrated_by"].get("mint") == 2, records[-1]
    assert records[-1]["unmatched"] == 0
    for thought in agent.summaries()[-3:-1]:
        assert orjson.dumps(thought)[1:-1] in last.raw
