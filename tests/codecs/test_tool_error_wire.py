"""A failed tool result reaches the model as a failure, on every API (issue 47 item 1).

Each codec encodes the same three turns (a question, a call, its result) once with the result
marked ``is_error`` and once without, and the test reads the bytes the transport would send. What
each API's error form is:

- Anthropic Messages: ``tool_result`` with ``is_error: true``
  (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use, "Handling
  errors"); absent on a success, as the recorded requests send it.
- Gemini: ``functionResponse.response`` with the key ``error`` in place of ``output``
  (https://ai.google.dev/api/caching#FunctionResponse: "Use "output" key to specify function
  output and "error" key to specify error details").
- Bedrock Converse: ``toolResult.status: "error"``, else ``"success"``
  (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolResultBlock.html).
- Interactions: ``function_result`` with ``is_error: true`` (google-genai
  ``_gaos/types/interactions``, see ``codecs/interactions/wire.py``).
- Chat Completions and Responses have no error flag: the result's text is all they carry, so
  the error text must reach them whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import orjson
import pytest

from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import RequestSpec
from thoughtline.codecs.gemini.profile import GeminiProfile
from thoughtline.messages import Message, Origin, Text, ToolCall, ToolResult, tool_results, user
from thoughtline.wire.cache import WireCache

ERROR_TEXT = "lookup failed: no such city 'Atlantis'"
CALL_ID = "call_weather_1"

#: (api, provider preset, base URL, model) of one ordinary route per API.
ROUTES = {
    "anthropic": ("anthropic", "anthropic", None, "claude-sonnet-4-5"),
    "gemini": ("gemini", "gemini", None, "gemini-2.5-flash"),
    "bedrock": ("bedrock", "bedrock", None, "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    "interactions": ("gemini-interactions", "gemini-interactions", None, "gemini-3-pro-preview"),
    "chat": ("openai-chat", "openai", None, "gpt-5"),
    "responses": ("openai-responses", "openai-responses", None, "gpt-5"),
}


def _plan(which: str) -> tuple[Any, replay.ReplayPlan, str]:
    api, provider, base, model = ROUTES[which]
    codec = registry.codec(api)
    return codec, replay.plan(codec.resolve(provider, base, model)), model


def _history(plan: replay.ReplayPlan, *, is_error: bool) -> list[Message]:
    assert plan.target is not None
    here: Origin = plan.target  # the call is the target's own (no foreign-call handling)
    call = ToolCall(id=CALL_ID, name="get_weather", arguments='{"city": "Atlantis"}')
    return [user("What is the weather in Atlantis?"),
            Message(role="assistant", parts=(call,), origin=here),
            tool_results([ToolResult(call_id=CALL_ID, content=ERROR_TEXT, is_error=is_error)])]


def _wire(which: str, *, is_error: bool, cache: WireCache | None = None,
          history: Sequence[Message] | None = None) -> Any:
    codec, plan, model = _plan(which)
    encoded = codec.encode_request(history or _history(plan, is_error=is_error), plan,
                                   RequestSpec(model=model), cache)
    return orjson.loads(encoded.raw)  # the bytes the transport sends


def _anthropic_result(body: Any) -> dict[str, Any]:
    [found] = [b for m in body["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b["type"] == "tool_result"]
    return found


def _gemini_responses(body: Any) -> list[dict[str, Any]]:
    return [p["functionResponse"] for c in body["contents"] for p in c["parts"]
            if "functionResponse" in p]


def _bedrock_result(body: Any) -> dict[str, Any]:
    [found] = [b["toolResult"] for m in body["messages"] for b in m["content"]
               if "toolResult" in b]
    return found


def _interactions_result(body: Any) -> dict[str, Any]:
    [found] = [s for s in body["input"] if s["type"] == "function_result"]
    return found


# --- APIs with an error form -------------------------------------------------------------------


@pytest.mark.parametrize("is_error", [True, False])
def test_anthropic_marks_a_failed_result_is_error_and_only_a_failed_one(is_error: bool) -> None:
    block = _anthropic_result(_wire("anthropic", is_error=is_error))
    assert block["tool_use_id"] == CALL_ID and block["content"] == ERROR_TEXT
    if is_error:
        assert block["is_error"] is True
    else:
        assert "is_error" not in block


@pytest.mark.parametrize("is_error", [True, False])
def test_gemini_sends_a_failed_result_under_error_and_a_success_under_output(
        is_error: bool) -> None:
    [response] = _gemini_responses(_wire("gemini", is_error=is_error))
    assert response["name"] == "get_weather" and response["id"] == CALL_ID
    expected = {"error": ERROR_TEXT} if is_error else {"output": ERROR_TEXT}
    assert response["response"] == expected


@pytest.mark.parametrize("is_error", [True, False])
def test_gemini_says_error_when_a_result_goes_as_text(is_error: bool) -> None:
    # A call Gemini did not make, on a route that rejected the placeholder signature, goes as
    # text (``foreign_calls = "text"``): its result does too, and still says it failed.
    codec, plan, model = _plan("gemini")
    assert isinstance(plan.profile, GeminiProfile)
    plan = replace(plan, profile=replace(plan.profile, foreign_calls="text"))
    history = _history(plan, is_error=is_error)
    foreign = Origin(api="openai-chat", provider="openai", host="api.openai.com", model="gpt-5")
    history[1] = replace(history[1], origin=foreign)
    body = orjson.loads(codec.encode_request(history, plan, RequestSpec(model=model)).raw)
    assert not _gemini_responses(body)
    [said] = [p["text"] for c in body["contents"] if c["role"] == "user" for p in c["parts"]
              if ERROR_TEXT in p.get("text", "")]
    label = "error" if is_error else "result"
    assert said == f"[{label} of tool get_weather: {ERROR_TEXT}]"


@pytest.mark.parametrize("is_error", [True, False])
def test_bedrock_sends_status_error_for_a_failed_result_and_success_otherwise(
        is_error: bool) -> None:
    result = _bedrock_result(_wire("bedrock", is_error=is_error))
    assert result["toolUseId"] == CALL_ID and result["content"] == [{"text": ERROR_TEXT}]
    assert result["status"] == ("error" if is_error else "success")


@pytest.mark.parametrize("is_error", [True, False])
def test_interactions_marks_a_failed_function_result_and_only_a_failed_one(
        is_error: bool) -> None:
    step = _interactions_result(_wire("interactions", is_error=is_error))
    assert step["call_id"] == CALL_ID and step["result"] == ERROR_TEXT
    if is_error:
        assert step["is_error"] is True
    else:
        assert "is_error" not in step


# --- APIs with text only -----------------------------------------------------------------------


@pytest.mark.parametrize("is_error", [True, False])
def test_chat_carries_the_error_text_whole(is_error: bool) -> None:
    body = _wire("chat", is_error=is_error)
    [tool] = [m for m in body["messages"] if m["role"] == "tool"]
    assert tool == {"role": "tool", "tool_call_id": CALL_ID, "content": ERROR_TEXT}


@pytest.mark.parametrize("is_error", [True, False])
def test_responses_carries_the_error_text_whole(is_error: bool) -> None:
    body = _wire("responses", is_error=is_error)
    [output] = [i for i in body["input"] if i.get("type") == "function_call_output"]
    assert output == {"type": "function_call_output", "call_id": CALL_ID, "output": ERROR_TEXT}


# --- the stored wire forms keep the flag -------------------------------------------------------


@pytest.mark.parametrize("which", ["anthropic", "gemini", "bedrock", "interactions"])
def test_a_cached_success_is_never_spliced_in_for_the_same_result_failed(which: str) -> None:
    # The same call id and text, once a success and once a failure (a client that retried a
    # tool and reports the outcome differently): the wire cache must not serve the first form.
    cache = WireCache()
    _, plan, _ = _plan(which)
    ok = _wire(which, is_error=False, cache=cache, history=_history(plan, is_error=False))
    failed = _wire(which, is_error=True, cache=cache, history=_history(plan, is_error=True))
    assert failed != ok
    assert failed == _wire(which, is_error=True)  # as encoded with no cache at all


def test_the_error_text_is_all_a_text_only_api_gets_and_it_is_never_dropped() -> None:
    # Belt and braces over every API: the error text is somewhere in the bytes, once.
    for which in ROUTES:
        codec, plan, model = _plan(which)
        raw = codec.encode_request(_history(plan, is_error=True), plan,
                                   RequestSpec(model=model)).raw
        assert raw.count(ERROR_TEXT.encode()) == 1, which


def test_a_text_part_beside_a_failed_result_does_not_hide_the_flag() -> None:
    # Anthropic users often send a note with the results: the flag stays on the result block.
    codec, plan, model = _plan("anthropic")
    history = _history(plan, is_error=True)
    history[2] = Message(role="user", parts=(*history[2].parts, Text(text="please retry")))
    body = orjson.loads(codec.encode_request(history, plan, RequestSpec(model=model)).raw)
    assert _anthropic_result(body)["is_error"] is True


# --- a call nobody answered is repaired as a failure -------------------------------------------


@pytest.mark.parametrize("which", ["anthropic", "gemini", "bedrock", "interactions"])
def test_a_repaired_unanswered_call_reaches_the_wire_as_a_failure(which: str) -> None:
    # The request that carried the results failed; the next turn is a user message. The view
    # ``replay.answered`` (what ``turn.py`` encodes) answers the call with an error result: the
    # model must read it as "the tool did not run", never as a tool that returned that text.
    codec, plan, model = _plan(which)
    history = [*_history(plan, is_error=False)[:2], user("never mind, what about Oslo?")]
    view = replay.answered(history)
    body = orjson.loads(codec.encode_request(view, plan, RequestSpec(model=model)).raw)
    assert replay.UNANSWERED.encode() in orjson.dumps(body)
    if which == "anthropic":
        assert _anthropic_result(body)["is_error"] is True
    elif which == "gemini":
        [response] = _gemini_responses(body)
        assert response["response"] == {"error": replay.UNANSWERED}
    elif which == "bedrock":
        assert _bedrock_result(body)["status"] == "error"
    else:
        assert _interactions_result(body)["is_error"] is True
