"""A Responses client's tools wherever it puts them: flat names every upstream accepts, mapped
back to the client's namespace and name; ``additional_tools`` items in place for a Responses
upstream; custom calls and their outputs verbatim to it."""

from __future__ import annotations

import re

import orjson
from hypothesis import given
from hypothesis import strategies as st

from thoughtline import replay
from thoughtline.codecs.openai_responses import client, encode, reply, resolve_responses
from thoughtline.codecs.openai_responses.tools import flat_name
from thoughtline.messages import Message, ToolCall

PLAN = replay.plan(resolve_responses("openai-responses", "https://api.openai.com/v1", "gpt-5.5"))
_SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_NAMES = st.text(min_size=1, max_size=80)


@given(_NAMES, _NAMES)
def test_a_flat_name_is_one_every_upstream_accepts(namespace: str, name: str) -> None:
    assert _SAFE.fullmatch(flat_name(namespace, name))


@given(st.lists(st.tuples(_NAMES, _NAMES), min_size=2, max_size=6, unique=True))
def test_distinct_tools_get_distinct_flat_names(pairs: list[tuple[str, str]]) -> None:
    flats = [flat_name(ns, name) for ns, name in pairs]
    if len({f"{ns}__{n}" for ns, n in pairs}) == len(pairs):  # "a__b"+"c" vs "a"+"b__c"
        assert len(set(flats)) == len(pairs)


def test_a_plain_namespaced_name_reads_as_codex_writes_it() -> None:
    assert flat_name("collaboration", "spawn_agent") == "collaboration__spawn_agent"
    assert flat_name("", "exec_command") == "exec_command"


ITEM = {"type": "additional_tools", "id": "at_1", "role": "developer", "tools": [
    {"type": "namespace", "name": "functions", "description": "", "tools": [
        {"type": "custom", "name": "exec", "description": "Run JS.",
         "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}},
        {"type": "function", "name": "wait", "description": "Wait.", "strict": False,
         "parameters": {"type": "object", "properties": {"cell_id": {"type": "string"}}}}]}]}
CALL = {"type": "custom_tool_call", "id": "ctc_1", "status": "completed", "call_id": "c1",
        "namespace": "functions", "name": "exec", "input": "text(1);"}
OUTPUT = {"type": "custom_tool_call_output", "id": "ctco_1", "call_id": "c1",
          "output": [{"type": "input_text", "text": "Script completed"},
                     {"type": "input_text", "text": "1"}]}


def _body(*items: dict) -> dict:
    return {"model": "m", "input": [ITEM, {"role": "user", "content": "go"}, *items]}


def test_tools_in_an_additional_tools_item_are_the_request_s_tools() -> None:
    request = client.parse_request(_body(CALL, OUTPUT))
    assert [t.name for t in request.tools] == ["functions__exec", "functions__wait"]
    exec_, wait = request.tools
    assert exec_.parameters["required"] == ["input"]
    assert exec_.description.endswith("lark grammar:\nstart: /.+/")
    assert wait.parameters == ITEM["tools"][0]["tools"][1]["parameters"]
    (call,) = request.messages[-2].parts
    assert call.name == "functions__exec" and orjson.loads(call.arguments) == {
        "input": "text(1);"}
    assert request.messages[-1].parts[0].content == "Script completed\n1"
    # the item itself is no message of any role: other APIs never see it
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]


def test_a_responses_upstream_gets_the_client_items_byte_identical_in_place() -> None:
    request = client.parse_request(_body(CALL, OUTPUT))
    body = encode.encode_request(request.messages, PLAN, model="gpt-5.5", tools=request.tools)
    items = body["input"]
    assert orjson.dumps(items[0]) == orjson.dumps(ITEM)
    assert orjson.dumps(items[-2]) == orjson.dumps(CALL)
    assert orjson.dumps(items[-1]) == orjson.dumps(OUTPUT)
    assert "tools" not in body


def test_a_call_from_any_upstream_goes_back_under_the_client_s_names() -> None:
    request = client.parse_request(_body())
    call = ToolCall(id="c2", name="functions__exec", arguments='{"input": "text(2);"}')
    wait = ToolCall(id="c3", name="functions__wait", arguments='{"cell_id": "7"}')
    items = reply.output_json(Message(role="assistant", parts=(call, wait)), response_id="r",
                              names=request.tool_names)
    assert [(i["type"], i.get("namespace"), i["name"]) for i in items] == [
        ("custom_tool_call", "functions", "exec"), ("function_call", "functions", "wait")]
    assert items[0]["input"] == "text(2);" and items[1]["arguments"] == '{"cell_id": "7"}'


def test_an_item_after_the_last_message_rides_on_it() -> None:
    body = {"model": "m", "input": [{"role": "user", "content": "go"}, ITEM]}
    request = client.parse_request(body)
    (message,) = request.messages
    assert message.native["openai-responses"]["after"] == [ITEM]
    assert [t.name for t in request.tools] == ["functions__exec", "functions__wait"]
