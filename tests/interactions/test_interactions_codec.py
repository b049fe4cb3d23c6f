"""The Interactions codec on its own: request shape, the chain check, rejections, endpoints and
decoding (issue 29). Shapes: google-genai 3.6.1 ``_gaos/types/interactions`` (see the package
docstring); no recorded traffic exists."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
import pytest

from thoughtline import config
from thoughtline.codecs import registry
from thoughtline.codecs.base import RequestSpec
from thoughtline.codecs.interactions import chain
from thoughtline.codecs.interactions.encode import Sent
from thoughtline.errors import ProtocolError, UsageError
from thoughtline.events import Done
from thoughtline.messages import Message, Origin, Reasoning, Text, ToolCall, ToolResult, Usage
from thoughtline.replay import plan as replay_plan

API = "gemini-interactions"
MODEL = "gemini-3-pro-preview"
BASE = "https://generativelanguage.googleapis.com/v1beta"
CODEC = registry.codec(API)
ROUTE = CODEC.resolve("gemini-interactions", BASE, MODEL)
ORIGIN = Origin(api=API, provider="gemini-interactions", host=ROUTE.host, model=MODEL)
PLAN = replay_plan(ROUTE, [])


def _answer(n: int, ident: str = "", *, origin: Origin = ORIGIN) -> Message:
    native = {API: {chain.ID_KEY: ident}} if ident else {}
    return Message(role="assistant", origin=origin, native=native, parts=(
        Reasoning(kind="signed", signature=f"Cq{n}sig==", summary=f"thinking {n}", origin=origin),
        Text(text=f"answer {n}")))


def _user(text: str) -> Message:
    return Message(role="user", parts=(Text(text=text),))


def _stamped_history(turns: int) -> list[Message]:
    """A history as a stateful session stores it: each answer stamped by the codec's hook."""
    history: list[Message] = []
    for n in range(1, turns + 1):
        history.append(_user(f"q{n}"))
        encoded = CODEC.encode_request(history, PLAN, RequestSpec(model=MODEL))
        done = Done(message=_answer(n, f"v1_{n}"), usage=Usage(), finish_reason="completed")
        history.append(CODEC.stamp(done, encoded).message)
    return history


def _body(history: list[Message], **spec: Any) -> Any:
    encoded = CODEC.encode_request(history, PLAN, RequestSpec(model=MODEL, **spec))
    return encoded.body, encoded.index


def test_a_matching_history_continues_the_chain_with_only_the_new_turn() -> None:
    history = [*_stamped_history(2), _user("q3")]
    body, _ = _body(history)
    assert body["previous_interaction_id"] == "v1_2" and body["store"] is True
    assert body["input"] == [{"type": "user_input", "content": [{"type": "text", "text": "q3"}]}]
    assert CODEC.summary(CODEC.encode_request(history, PLAN, RequestSpec(model=MODEL)))[
        "state"] == "continued"


@pytest.mark.parametrize("change", ["edited", "model", "foreign", "gone"])
def test_a_chain_that_no_longer_matches_sends_the_whole_history(change: str) -> None:
    history = [*_stamped_history(2), _user("q3")]
    plan = PLAN
    if change == "edited":  # an earlier turn rewritten (compaction, an edit)
        history[0] = _user("q1, rewritten")
        why = "changed since interaction v1_2"
    elif change == "model":
        history[3] = replace(history[3], origin=replace(ORIGIN, model="gemini-3-flash-preview"))
        why = "another model or service"
    elif change == "foreign":  # the last answer came from another API
        history.insert(4, Message(role="assistant", parts=(Text(text="from elsewhere"),),
                                  origin=Origin(api="openai-chat", provider="x", model="y")))
        history.insert(5, _user("q3b"))
        why = "message 4 is not a stored interaction"
    else:
        plan = replay_plan(ROUTE, [], settings={chain.GONE: "v1_2"})
        why = "no longer has interaction v1_2"
    encoded = CODEC.encode_request(history, plan, RequestSpec(model=MODEL))
    assert "previous_interaction_id" not in encoded.body
    assert encoded.body["input"][0]["content"][0]["text"].startswith("q1")
    summary = CODEC.summary(encoded)
    assert summary["state"] == "fallback" and why in summary["state_note"]


def test_stateless_sends_every_thought_step_and_keeps_the_history_untouched() -> None:
    history = [*_stamped_history(2), _user("q3")]
    before = [orjson.dumps(m.parts, default=repr) for m in history]
    body, _ = _body(history, params={"store": False})
    again, _ = _body(history, params={"store": False})
    assert orjson.dumps(body) == orjson.dumps(again)
    assert body["store"] is False and "previous_interaction_id" not in body
    assert [s["signature"] for s in body["input"] if s["type"] == "thought"] == [
        "Cq1sig==", "Cq2sig=="]
    assert body["input"][1] == {"type": "thought", "signature": "Cq1sig==",
                                "summary": [{"type": "text", "text": "thinking 1"}]}
    assert [orjson.dumps(m.parts, default=repr) for m in history] == before
    done = Done(message=_answer(3, "v1_3"), usage=Usage(), finish_reason="completed")
    unkept = CODEC.stamp(done, CODEC.encode_request(history, PLAN, RequestSpec(
        model=MODEL, params={"store": False}))).message
    assert API not in unkept.native  # the server kept nothing: no id to continue from


def test_a_request_carries_only_fields_the_api_reads() -> None:
    history = [Message(role="system", parts=(Text(text="be brief"),)), _user("q"),
               Message(role="assistant", origin=ORIGIN, parts=(
                   ToolCall(id="c1", name="lookup", arguments='{"q": 1}'),)),
               Message(role="tool", parts=(ToolResult(call_id="c1", content="42"),))]
    from thoughtline.messages import ToolSpec

    body, _ = _body(history, tools=(ToolSpec(name="lookup"),), stream=True,
                    params={"generation_config": {"thinking_level": "high"}})
    assert set(body) == {"model", "input", "store", "system_instruction", "tools", "stream",
                         "generation_config"}
    assert body["input"][1:] == [
        {"type": "function_call", "id": "c1", "name": "lookup", "arguments": {"q": 1}},
        {"type": "function_result", "call_id": "c1", "result": "42"}]
    assert body["system_instruction"] == "be brief"
    encoded = CODEC.encode_request(history, PLAN, RequestSpec(
        model=MODEL, params={"generation_config": {"thinking_level": "high"}}))
    assert CODEC.summary(encoded)["body_extras"] == ["generation_config"]  # the caller's only


def test_rejections_fingerprint_the_sent_signatures_once() -> None:
    history = [*_stamped_history(1), _user("q2")]
    encoded = CODEC.encode_request(history, PLAN, RequestSpec(model=MODEL,
                                                              params={"store": False}))
    vertex = ('{"error": {"code": 400, "message": "Unable to submit request because Thought '
              'signature is not valid.. Learn more: https://cloud.google.com/vertex-ai/'
              'generative-ai/docs/model-reference/gemini", "status": "INVALID_ARGUMENT"}}')
    lesson = CODEC.classify(400, vertex, encoded, PLAN)
    assert lesson is not None and lesson.wording == "vertex-invalid"
    assert len(lesson.fingerprints) == 1
    retry = replay_plan(ROUTE, [], fingerprints=lesson.fingerprints)
    body = CODEC.encode_request(history, retry, RequestSpec(model=MODEL,
                                                            params={"store": False})).body
    assert [s["type"] for s in body["input"]] == ["user_input", "model_output", "user_input"]
    assert CODEC.classify(500, vertex, encoded, PLAN) is None
    assert CODEC.classify(400, '{"error": {"message": "Other."}}', encoded, PLAN) is None


def test_a_lost_interaction_teaches_the_session_that_id() -> None:
    history = [*_stamped_history(1), _user("q2")]
    encoded = CODEC.encode_request(history, PLAN, RequestSpec(model=MODEL))
    lesson = CODEC.classify(404, '{"error": {"code": 404, "message": "Interaction not found: '
                                 'v1_1", "status": "NOT_FOUND"}}', encoded, PLAN)
    assert lesson is not None and lesson.settings == {API: {chain.GONE: "v1_1"}}


def test_endpoints_and_auth() -> None:
    studio = config.provider("gemini-interactions")
    assert CODEC.endpoint(studio, MODEL, stream=True).url == BASE + "/interactions"
    assert CODEC.endpoint(studio, MODEL, stream=True).framing == "sse"
    assert CODEC.auth_scheme(studio) == "x-goog-api-key"
    vertex = replace(config.provider("vertex-gemini-interactions"), project="p1",
                     region="europe-west4")
    assert CODEC.endpoint(vertex, MODEL, stream=False).url == (
        "https://europe-west4-aiplatform.googleapis.com/v1beta1/projects/p1/locations/"
        "europe-west4/interactions")
    assert CODEC.auth_scheme(vertex) == "google-oauth"
    with pytest.raises(UsageError, match="Vertex needs a project"):
        CODEC.endpoint(replace(vertex, project=""), MODEL, stream=False)


def test_decoding_skips_echoed_input_and_reads_the_status() -> None:
    done = CODEC.decode_response({"id": "v1_9", "status": "requires_action", "steps": [
        {"type": "user_input", "content": [{"type": "text", "text": "echo"}]},
        {"type": "thought", "signature": "Cqabc"},
        {"type": "function_call", "name": "lookup", "arguments": {"q": "x"}},
        {"type": "google_search_call", "id": "s1"}]}, ORIGIN, seed="abcdef")
    reasoning, call = done.message.parts
    assert isinstance(reasoning, Reasoning) and reasoning.signature == "Cqabc"
    assert isinstance(call, ToolCall) and call.id == "call_abcdef_2"
    assert call.arguments == '{"q":"x"}'
    assert done.finish == "tool_calls" and done.message.native[API][chain.ID_KEY] == "v1_9"
    with pytest.raises(ProtocolError, match="not an Interaction"):
        CODEC.decode_response({"output": []}, ORIGIN)
    with pytest.raises(ProtocolError, match="error object"):
        CODEC.decode_response({"error": {"code": 400, "message": "x"}}, ORIGIN)
    with pytest.raises(ProtocolError, match=r"interaction failed: .*overloaded"):
        CODEC.decode_response({"status": "failed", "errors": [{"message": "overloaded"}]},
                              ORIGIN)
    fold = CODEC.new_fold(ORIGIN)
    with pytest.raises(ProtocolError, match="interaction failed"):
        fold.add_event("", {"event_type": "interaction.completed",
                            "interaction": {"id": "v1_f", "status": "failed"}})


def test_scope_follows_the_gemini_rules() -> None:
    profile = ROUTE.profile
    lite = replace(ORIGIN, model="gemini-3-flash-lite-preview")
    vertex = replace(ORIGIN, host="us-central1-aiplatform.googleapis.com")
    assert profile.accepts(ORIGIN, replace(ORIGIN, model="gemini-3.1-pro-preview"))
    assert not profile.accepts(ORIGIN, lite)  # another tier
    assert not profile.accepts(ORIGIN, vertex)  # another signing service
    assert not profile.accepts(replace(ORIGIN, api="gemini"), ORIGIN)  # another API's values
    assert not profile.accepts(replace(ORIGIN, host="a.example"),
                               replace(ORIGIN, host="b.example"))


def test_sent_index_is_the_codec_own() -> None:
    encoded = CODEC.encode_request([_user("q")], PLAN, RequestSpec(model=MODEL))
    assert isinstance(encoded.index, Sent) and CODEC.summary(encoded)["state"] == "new"
