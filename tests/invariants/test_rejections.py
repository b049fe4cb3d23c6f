"""Repairs drop exactly the culprit, and a value rejected once stays rejected.

Each test goes through a codec's public seam: encode a request from decoded recordings, read the
provider's rejection with ``classify`` (what the turn engine does), plan the retry with what was
learned, encode again and look at the retried body's bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from thoughtline import replay
from thoughtline.codecs.base import Encoded, RequestSpec
from thoughtline.codecs.bedrock import CODEC as BEDROCK
from thoughtline.codecs.openai_chat import CODEC as CHAT
from thoughtline.codecs.openai_responses import CODEC as RESPONSES
from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolResult,
    tool_results,
    user,
)
from thoughtline.verdicts import Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLAUDE_37 = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
GPT_56 = "us.openai.gpt-5.6-luna"


def _load(path: str) -> Any:
    return orjson.loads((FIXTURES / path).read_bytes())


# --- Bedrock: a rejected opaque value is never sent again -------------------------------------


def _bedrock_round(name: str, model: str, rejection: str) -> tuple[bytes, bytes, bytes]:
    """(the recorded opaque value, the first body, the retried body) for a recorded answer."""
    recorded = _load(f"bedrock/{name}")
    answer = BEDROCK.decode_response(recorded, Origin(
        api="bedrock", provider="bedrock", model=model)).message
    history = [user("q"), answer, user("again")]
    route = BEDROCK.resolve("bedrock", None, model)
    plan = replay.plan(route)
    first = BEDROCK.encode_request(history, plan, RequestSpec(model=model))
    [block] = [b["reasoningContent"] for b in recorded["output"]["message"]["content"]
               if "reasoningContent" in b]
    lesson = BEDROCK.classify(400, orjson.dumps({"message": rejection}).decode(), first, plan)
    assert lesson is not None and lesson.fingerprints
    retry = replay.plan(route, fingerprints=lesson.fingerprints)
    again = BEDROCK.encode_request(history, retry, RequestSpec(model=model))
    return orjson.dumps(block["redactedContent"]), first.raw, again.raw


@pytest.mark.parametrize(("name", "model"), [
    ("pydantic-ai-bedrock-claude-redacted.i0.response.json", CLAUDE_37),
    ("vercel-amazon-bedrock-gpt56-luna-redacted-content.json", GPT_56),
])
def test_bedrock_rejected_redacted_content_is_never_sent_again(name: str, model: str) -> None:
    value, first, again = _bedrock_round(
        name, model, "messages.1.content.0: Invalid 'data' in 'redacted_thinking' block")
    assert value in first  # the control: the recorded bytes went out the first time
    assert value not in again
    assert b"redactedContent" not in again


def test_bedrock_rejected_signature_is_never_sent_again() -> None:
    answer = BEDROCK.decode_response(_load(
        "bedrock/pydantic-ai-bedrock-claude-thinking.i0.response.json"), Origin(
        api="bedrock", provider="bedrock", model=CLAUDE_37)).message
    history = [user("q"), answer, user("again")]
    route = BEDROCK.resolve("bedrock", None, CLAUDE_37)
    first = BEDROCK.encode_request(history, replay.plan(route), RequestSpec(model=CLAUDE_37))
    signature = orjson.dumps(answer.reasoning[0].signature)
    assert signature in first.raw
    lesson = BEDROCK.classify(400, orjson.dumps({
        "message": "messages.1.content.0.reasoningContent: Invalid `signature` in `thinking` "
                   "block"}).decode(), first, replay.plan(route))
    assert lesson is not None
    again = BEDROCK.encode_request(history, replay.plan(route, fingerprints=lesson.fingerprints),
                                   RequestSpec(model=CLAUDE_37))
    assert signature not in again.raw and b"reasoningContent" not in again.raw


# --- Responses: a function_call looked up by id loses only its id ------------------------------


def test_responses_function_call_rejected_by_id_loses_only_its_id() -> None:
    origin = Origin(api="openai-responses", provider="openai-responses", host="api.openai.com",
                    model="gpt-5")
    answer = RESPONSES.decode_response(_load(
        "openai-responses/pydantic-ai-openai-responses-reasoning-tool-calls.i0.response.json"),
        origin).message
    history = [user("q"), answer, tool_results([ToolResult(call_id=answer.tool_calls[0].id,
                                                           content="ok")])]
    route = RESPONSES.resolve("openai-responses", "https://api.openai.com/v1", "gpt-5")
    spec = RequestSpec(model="gpt-5")
    first = RESPONSES.encode_request(history, replay.plan(route), spec)
    [call] = [i for i in first.body["input"] if i.get("type") == "function_call"]
    assert call.get("id") and "encrypted_content" not in call
    body = orjson.dumps({"error": {"message": f"Item with id '{call['id']}' not found. Items are "
                                              "not persisted when `store` is set to false.",
                                   "type": "invalid_request_error", "code": None}}).decode()
    lesson = RESPONSES.classify(400, body, first, replay.plan(route))
    assert lesson is not None and len(lesson.fingerprints) == 1
    again = RESPONSES.encode_request(history, replay.plan(route, fingerprints=lesson.fingerprints),
                                     spec)
    [retried] = [i for i in again.body["input"] if i.get("type") == "function_call"]
    assert "id" not in retried  # only the id the server could not find is left off
    assert orjson.dumps({k: v for k, v in call.items() if k != "id"}) == orjson.dumps(retried)
    reasoning = [orjson.dumps(i) for i in first.body["input"] if i.get("type") == "reasoning"]
    assert reasoning and reasoning == [orjson.dumps(i) for i in again.body["input"]
                                       if i.get("type") == "reasoning"]


# --- Chat: the classifier reads the route's echo rule, and nested bodies --------------------------

RELAY = ("custom", "http://127.0.0.1:9/v1", "relay-model")


def _chat_rejection(verdicts: tuple[Verdict, ...], body: str) -> Any:
    route = CHAT.resolve(*RELAY)
    plan = replay.plan(route, verdicts)
    where = Origin(api="openai-chat", provider="custom", host="127.0.0.1", model="relay-model")
    thought = Message(role="assistant", origin=where,
                      parts=(Reasoning(kind="text", text="pondering", origin=where),
                             Text(text="hello")))
    plain = Message(role="assistant", parts=(Text(text="hi again"),), origin=where)
    encoded: Encoded = CHAT.encode_request([user("q"), thought, user("more"), plain,
                                            user("again")], plan, RequestSpec(model=RELAY[2]))
    return encoded, CHAT.classify(400, body, encoded, plan)


GROQ_RC = {"error": {"message": "'messages.1' : for 'role:assistant' the following must be "
                                "satisfied[('messages.1' : property 'reasoning_content' is "
                                "unsupported)]", "type": "invalid_request_error"}}


def test_chat_a_route_that_learned_its_pad_reads_a_reasoning_content_complaint_as_a_value() -> None:
    pad = Verdict(provider="custom", host="127.0.0.1", model="relay-model", pad=True,
                  reason="requires reasoning_content on assistant turns")
    encoded, lesson = _chat_rejection((pad,), orjson.dumps(GROQ_RC).decode())
    assert b'"reasoning_content":" "' in encoded.raw  # the learned pad is on the wire
    assert lesson is None  # not "unknown field": never drop what the route demanded
    _, without_pad = _chat_rejection((), orjson.dumps(GROQ_RC).decode())
    assert without_pad is not None and "reasoning_content" in without_pad.verdict.drop


def _nested(body: Any, wrappers: int) -> str:
    """``body`` as OpenRouter relays it (``metadata.raw``), wrapped ``wrappers`` times."""
    for _ in range(wrappers):
        body = {"error": {"message": "Provider returned error", "code": 400,
                          "metadata": {"raw": orjson.dumps(body).decode(),
                                       "provider_name": "Relay"}}}
    return orjson.dumps(body).decode()


@pytest.mark.parametrize("wrappers", [0, 1, 2, 3])
def test_chat_error_bodies_nested_up_to_four_levels_are_read(wrappers: int) -> None:
    # A line break inside the wording: it only reads once every level's escapes are undone.
    inner = {"error": {"message": "messages.1.assistant: property 'reasoning' is\nunsupported",
                       "type": "invalid_request_error"}}
    _, lesson = _chat_rejection((), _nested(inner, wrappers))
    assert lesson is not None and lesson.verdict is not None
    assert lesson.verdict.drop == {"reasoning"}
