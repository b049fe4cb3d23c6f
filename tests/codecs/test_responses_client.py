"""The Responses face's codec: Codex requests parsed, answers rendered in the exact wire shapes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import CompactedResponse, Response, ResponseStreamEvent
from pydantic import TypeAdapter

from thoughtline.codecs.face import ClientRequestError
from thoughtline.codecs.openai_responses import client, reply
from thoughtline.codecs.openai_responses.wire import NS
from thoughtline.events import Done, ReasoningDelta, TextDelta
from thoughtline.messages import Message, Origin, Reasoning, Text, ToolCall, ToolResult, Usage

CLIENTS = Path(__file__).parent.parent / "fixtures" / "clients"
MINTED = "tl1:resp_0123456789ab.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
DEEPSEEK = Origin(api="openai-chat", provider="deepseek", model="deepseek-reasoner")
OPENAI = Origin(api="openai-responses", provider="openai", model="gpt-5.5")


def recorded(name: str) -> list[dict]:
    return [orjson.loads(line) for line in (CLIENTS / f"{name}.requests.jsonl").read_bytes()
            .splitlines() if line.strip()]


def test_codex_second_request_groups_items_and_keeps_reasoning_verbatim() -> None:
    sent = recorded("codex_run1")[1]
    request = client.parse_request(sent["body"], sent["headers"])
    roles = [m.role for m in request.messages]
    assert roles == ["system", "system", "user", "user", "assistant", "tool"]
    turn = request.messages[4]
    reasoning, call = turn.parts
    item = sent["body"]["input"][4]
    assert isinstance(reasoning, Reasoning) and reasoning.native[NS] == item
    assert orjson.dumps(reasoning.native[NS]) == orjson.dumps(item)  # byte for byte, content: null
    assert reasoning.data == item["encrypted_content"] and reasoning.summary == "Plan: run probe."
    assert isinstance(call, ToolCall) and call.id == "call_mock_50dadd976d"
    assert call.arguments == item_args(sent) and call.native[NS]["id"] == "fc_mock_ebdaa3594cd4"
    (result,) = request.messages[5].parts
    assert isinstance(result, ToolResult) and result.call_id == "call_mock_50dadd976d"
    assert "thoughtline-probe" in result.content
    # client-made ids stay on the items, for a Responses upstream
    first = request.messages[0].native[NS]["item"]
    assert first["id"] == "msg_26ba3d89-ea80-5c20-8f7f-51a48853523b"
    assert request.minted == () and request.session_hint == "01a23298-39a1-7283-b7c4-454f9517e570"
    assert request.stream and not request.compact


def item_args(sent: dict) -> str:
    return sent["body"]["input"][5]["arguments"]


def test_codex_parameters_mapped_per_target_api_and_builtins_dropped() -> None:
    sent = recorded("codex_run1")[0]
    request = client.parse_request(sent["body"], sent["headers"])
    body = sent["body"]
    assert request.params_to("openai-responses") == {
        k: v for k, v in body.items() if k not in ("model", "input", "stream", "client_metadata")}
    assert request.params_to("openai-chat") == {"reasoning_effort": "medium",
                                                "tool_choice": "auto"}
    dropped = request.dropped_to("openai-chat")
    for key in ("client_metadata", "prompt_cache_key", "text", "parallel_tool_calls", "store",
                "include", "tools[web_search]", "tools[tool_search]"):
        assert key in dropped
    assert "reasoning" not in dropped and "tool_choice" not in dropped
    assert request.dropped_to("openai-responses") == ("client_metadata",)  # ChatGPT-only
    assert [n for n in request.tool_names.by_flat if request.tool_names.is_custom(n)] == [
        "apply_patch"]
    names = [t.name for t in request.tools]
    assert "exec_command" in names and "apply_patch" in names and len(names) == 8


def test_compaction_trigger_and_minted_compaction_item() -> None:
    sent = recorded("codex_run5_compact_remote")[1]
    request = client.parse_request(sent["body"], sent["headers"])
    assert request.compact
    assert not any(p for m in request.messages for p in m.parts
                   if getattr(p, "native", {}).get(NS, {}).get("type") == "compaction_trigger")
    later = recorded("codex_run5_compact_remote")[2]["body"]
    # the provider's own compaction item: verbatim, for a Responses upstream only
    own = client.parse_request(later)
    assert own.checkpoint == "" and own.messages[-1].parts[0].native[NS]["type"] == "compaction"
    minted = {**later, "input": [*later["input"][:-1],
                                 {"type": "compaction", "id": "cmp_x",
                                  "encrypted_content": MINTED}]}
    parsed = client.parse_request(minted)
    assert parsed.checkpoint == MINTED and parsed.checkpoint_at == len(parsed.messages)
    assert not any(MINTED in orjson.dumps(m.native).decode() for m in parsed.messages)


def test_minted_reasoning_is_readable_only_and_goes_to_minted() -> None:
    body = {"model": "m", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "reasoning", "id": reply.reasoning_id(MINTED), "content": None,
         "summary": [{"type": "summary_text", "text": "thinking"}], "encrypted_content": MINTED},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"}]}
    request = client.parse_request(body, {"Thread-Id": "t-1"})
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]
    assert request.minted[0].message == 1 and request.minted[0].value == MINTED
    (reasoning, _call) = request.messages[1].parts
    assert reasoning.native == {} and reasoning.summary == "thinking"  # never sent to a provider
    assert request.session_hint == "t-1"


def test_custom_tool_call_round_trip() -> None:
    body = {"model": "m", "tools": [{"type": "custom", "name": "apply_patch"}], "input": [
        {"type": "message", "role": "user", "content": "patch it"},
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "c9", "name": "apply_patch",
         "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "c9", "output": "Done"}]}
    request = client.parse_request(body)
    (call,) = request.messages[1].parts
    assert orjson.loads(call.arguments) == {"input": "*** Begin Patch"}
    assert request.messages[2].parts[0].content == "Done"
    items = reply.output_json(Message(role="assistant", parts=(call,)), response_id="r",
                              names=request.tool_names)
    assert items[0]["type"] == "custom_tool_call" and items[0]["input"] == "*** Begin Patch"
    assert items[0]["call_id"] == "c9"


@pytest.mark.parametrize(("body", "param"), [
    ([], None), ({"input": "x"}, "model"), ({"model": "m", "input": []}, "input"),
    ({"model": "m", "input": [3]}, "input[0]"),
    ({"model": "m", "input": [{"type": "message", "role": "tool", "content": "x"}]},
     "input[0].role"),
    ({"model": "m", "input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
    ({"model": "m", "input": "x", "instructions": 5}, "instructions"),
    ({"model": "m", "input": [{"type": "function_call", "arguments": -2 ** 64}]},
     "input[0].arguments"),
])
def test_bad_requests_name_what_is_wrong(body: object, param: str | None) -> None:
    with pytest.raises(ClientRequestError) as raised:
        client.parse_request(body)
    assert raised.value.param == param


# --- answers ----------------------------------------------------------------------------------


def deepseek_done() -> Done:
    message = Message(role="assistant", origin=DEEPSEEK, parts=(
        Reasoning(kind="text", text="I should run it."),
        ToolCall(id="call_1", name="exec_command", arguments='{"cmd":"echo hi"}')))
    return Done(message=message, usage=Usage(input_tokens=10, output_tokens=5,
                                             reasoning_tokens=3), finish_reason="tool_calls",
                finish="tool_calls")


def test_whole_answer_mints_one_reasoning_item_the_sdk_reads() -> None:
    body = reply.whole_json(deepseek_done(), response_id="resp_1", model="gpt-5.5", created=1,
                            minted=MINTED)
    parsed = Response.model_validate(body)
    reasoning, call = parsed.output
    assert reasoning.type == "reasoning" and reasoning.encrypted_content == MINTED
    assert reasoning.summary[0].text == "I should run it."
    assert call.type == "function_call" and call.arguments == '{"cmd":"echo hi"}'
    assert parsed.usage.output_tokens_details.reasoning_tokens == 3
    # the item the client sends back parses to the minted reference
    again = client.parse_request({"model": "m", "input": [
        {"type": "message", "role": "user", "content": "go"}, *body["output"]]})
    assert again.minted[0].value == MINTED


def test_responses_upstream_items_go_out_byte_for_byte() -> None:
    item = {"type": "reasoning", "id": "rs_real", "summary": [], "content": None,
            "encrypted_content": "gAAAAB-real"}
    shell = {"type": "message", "id": "msg_real", "status": "completed", "role": "assistant",
             "phase": "final_answer",
             "content": [{"type": "output_text", "text": None, "annotations": []}]}
    message = Message(role="assistant", origin=OPENAI, parts=(
        Reasoning(kind="encrypted", data="gAAAAB-real", origin=OPENAI, native={NS: item}),
        Text(text="done", native={NS: {"item": shell}})))
    done = Done(message=message, usage=Usage(), finish_reason="completed", finish="stop")
    output = reply.whole_json(done, response_id="r", model="m", created=1, minted=MINTED)["output"]
    assert orjson.dumps(output[0]) == orjson.dumps(item)
    assert output[1]["id"] == "msg_real" and output[1]["phase"] == "final_answer"
    assert output[1]["content"][0]["text"] == "done" and len(output) == 2


def test_opaque_only_reasoning_still_gets_a_reference() -> None:
    gemini = Origin(api="gemini", provider="google")
    message = Message(role="assistant", origin=gemini, parts=(
        ToolCall(id="c", name="f", arguments="{}", native={"gemini": {"thoughtSignature": "x"}}),))
    items = reply.output_json(message, response_id="r", minted=MINTED)
    assert items[0]["encrypted_content"] == MINTED and items[0]["summary"] == []


def events_of(raw: bytes) -> list[dict]:
    out = []
    for frame in raw.decode().split("\n\n"):
        if frame.strip():
            name, data = frame.split("\n")
            payload = orjson.loads(data.removeprefix("data: "))
            assert name == "event: " + payload["type"]
            out.append(payload)
    return out


def test_stream_is_the_exact_event_sequence() -> None:
    writer = reply.ResponseStreamWriter(response_id="resp_1", model="gpt-5.5", created=1,
                                        minted=MINTED)
    raw = writer.start()
    for event in (ReasoningDelta(text="I should "), ReasoningDelta(text="run it."),
                  TextDelta(text="Running.")):
        raw += writer.event(event) or b""
    done = deepseek_done()
    done = Done(message=Message(role="assistant", origin=DEEPSEEK,
                                parts=(*done.message.parts[:1], Text(text="Running."),
                                       *done.message.parts[1:])),
                usage=done.usage, finish_reason="tool_calls", finish="tool_calls")
    raw += writer.finish(done)
    events = events_of(raw)
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done", "response.reasoning_summary_part.done",
        "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.output_item.done",
        "response.completed"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    adapter = TypeAdapter(ResponseStreamEvent)
    for event in events:
        adapter.validate_python(event)  # every event is one the SDK knows, fields complete
    completed = events[-1]["response"]
    assert [i["type"] for i in completed["output"]] == ["reasoning", "message", "function_call"]
    assert events[13]["item"]["encrypted_content"] == MINTED
    assert events[13]["item"]["id"] == events[2]["item"]["id"]
    assert completed["usage"]["input_tokens"] == 10


def test_errors_in_the_responses_shape() -> None:
    assert reply.error_json("no such model", status=404, param="model") == {
        "error": {"message": "no such model", "type": "not_found_error", "param": "model",
                  "code": None}}
    writer = reply.ResponseStreamWriter(response_id="r", model="m", created=1)
    events = events_of(writer.start() + (writer.event(TextDelta(text="a")) or b"")
                       + writer.fail("upstream went away", code="bad_upstream"))
    assert [e["type"] for e in events][-2:] == ["error", "response.failed"]
    assert events[-1]["response"]["status"] == "failed"
    assert events[-1]["response"]["error"] == {"code": "server_error",
                                               "message": "upstream went away"}
    assert events[-2]["code"] == "bad_upstream"
    adapter = TypeAdapter(ResponseStreamEvent)
    for event in events:
        adapter.validate_python(event)


def test_compaction_answer_has_exactly_one_item() -> None:
    body = reply.compaction_json(response_id="r", model="m", created=1, minted=MINTED)
    (item,) = body["output"]
    assert item["type"] == "compaction" and item["encrypted_content"] == MINTED
    Response.model_validate(body)


def test_responses_upstream_stream_keeps_each_items_real_id() -> None:
    item = {"type": "reasoning", "id": "rs_real", "summary": [
        {"type": "summary_text", "text": "plan"}], "encrypted_content": "gAAAAB-real"}
    shell = {"type": "message", "id": "msg_real", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": None, "annotations": []}]}
    message = Message(role="assistant", origin=OPENAI, parts=(
        Reasoning(kind="encrypted", data="gAAAAB-real", summary="plan", origin=OPENAI,
                  native={NS: item}),
        Text(text="done", native={NS: {"item": shell}})))
    writer = reply.ResponseStreamWriter(response_id="resp_1", model="m", created=1,
                                        minted=MINTED, live=False)
    raw = writer.start() + (writer.event(ReasoningDelta(text="plan")) or b"") + (
        writer.event(TextDelta(text="done")) or b"")
    raw += writer.finish(Done(message=message, usage=Usage(), finish_reason="completed",
                              finish="stop"))
    events = events_of(raw)
    adapter = TypeAdapter(ResponseStreamEvent)
    for event in events:
        adapter.validate_python(event)
    added = [e["item"]["id"] for e in events if e["type"] == "response.output_item.added"]
    finished = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert added == ["rs_real", "msg_real"] == [i["id"] for i in finished]
    assert orjson.dumps(finished[0]) == orjson.dumps(item)
    deltas = [e["delta"] for e in events if e["type"].endswith(".delta")]
    assert deltas == ["plan", "done"]


def test_compaction_stream_and_compact_endpoint_answers() -> None:
    writer = reply.ResponseStreamWriter(response_id="resp_1", model="m", created=1,
                                        minted=MINTED)
    events = events_of(writer.start() + writer.compaction(Usage(input_tokens=7)))
    adapter = TypeAdapter(ResponseStreamEvent)
    for event in events:
        adapter.validate_python(event)
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done == [reply.compaction_item(MINTED)] == events[-1]["response"]["output"]
    sent = recorded("codex_run1")[0]
    request = client.parse_request(sent["body"], sent["headers"])
    body = reply.compacted_json(response_id="resp_1", created=1, minted=MINTED,
                                user_items=client.user_items(request))
    # Every field the SDK requires (its optional ones, such as ``image`` or the newer
    # ``service_tier``, may be absent; its typed ``output`` has no input messages, which the
    # endpoint's answer begins with, so the body is not validated against the model whole).
    required = {name for name, field in CompactedResponse.model_fields.items()
                if field.is_required()}
    assert required >= {"id", "object", "output"} and set(body) >= required
    assert body["object"] == "response.compaction"
    assert [i["type"] for i in body["output"]] == ["message", "message", "compaction"]
    assert body["output"][:2] == sent["body"]["input"][2:4]  # the user messages, as sent


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8)
                     | st.sampled_from(["reasoning", "function_call", "message", "user",
                                        "assistant", "compaction", "custom_tool_call",
                                        "function_call_output", "compaction_trigger", MINTED]),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.sampled_from(
                         ["type", "role", "content", "id", "summary", "encrypted_content",
                          "arguments", "call_id", "name", "input", "output", "text"]),
                         inner, max_size=6), max_leaves=30)


_PARTS = st.text(max_size=8) | st.lists(st.fixed_dictionaries(
    {"type": st.sampled_from(["input_text", "output_text", "input_image", "refusal"])},
    optional={"text": _JSON, "annotations": _JSON}), max_size=3) | _JSON
_ITEMS = st.one_of(
    st.fixed_dictionaries({"type": st.just("message"), "role": st.sampled_from(
        ["user", "developer", "assistant", "system"]), "content": _PARTS},
        optional={"id": st.text(max_size=6)}),
    st.fixed_dictionaries({"type": st.just("reasoning"), "id": st.text(max_size=6)}, optional={
        "summary": _JSON | st.lists(st.fixed_dictionaries({"type": st.just("summary_text"),
                                                           "text": _JSON})),
        "encrypted_content": st.just(MINTED) | st.text(max_size=8) | _JSON, "content": _JSON}),
    st.fixed_dictionaries({"type": st.sampled_from(["function_call", "custom_tool_call"])},
                          optional={"call_id": _JSON, "name": _JSON, "arguments": _JSON,
                                    "input": _JSON, "id": _JSON}),
    st.fixed_dictionaries({"type": st.sampled_from(["function_call_output",
                                                    "custom_tool_call_output"])},
                          optional={"call_id": _JSON, "output": _JSON}),
    st.fixed_dictionaries({"type": st.just("compaction")},
                          optional={"encrypted_content": st.just(MINTED) | _JSON}),
    st.just({"type": "compaction_trigger"}), _JSON)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(items=st.lists(_ITEMS, min_size=1, max_size=6),
       tools=st.none() | st.lists(st.fixed_dictionaries(
           {"type": st.sampled_from(["function", "custom", "web_search"]),
            "name": st.text(min_size=1, max_size=4)}, optional={"parameters": _JSON}),
           max_size=3) | _JSON,
       instructions=st.none() | st.text(max_size=8))
def test_any_body_parses_or_names_what_is_wrong(items: list, tools: object,
                                                instructions: object) -> None:
    body = {"model": "m", "input": items, "tools": tools, "instructions": instructions}
    try:
        request = client.parse_request(body, {"session-id": "s"})
    except ClientRequestError as exc:
        assert str(exc)
        return
    for message in request.messages:  # what parsed renders back without error
        reply.output_json(message, response_id="r", minted=MINTED)
