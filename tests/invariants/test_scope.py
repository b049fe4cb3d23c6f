"""Scope is directional and exact: where an opaque value made at origin O may be sent.

Through each codec's encoder on decoded recordings (a real request body), never through the
profile alone: the rule is "may a value from O go to T", asymmetric where the providers document
it (Fable 5.1 reads Opus 5 thinking, Opus 5 cannot read Fable 5.1's); a Responses item made at a
service with a host never goes to one without (or the reverse), and model families compare
exactly (``gpt-5`` is not ``gpt-5.6``); a Copilot opaque value goes only to the route that made
it (same host, same model).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest

from helpers_wire import encode_on
from thoughtline import replay
from thoughtline.codecs.anthropic import CODEC as ANTHROPIC
from thoughtline.codecs.base import RequestSpec
from thoughtline.codecs.openai_chat.decode import decode_response as decode_chat
from thoughtline.codecs.openai_responses import decode_response, encode_request, resolve_responses
from thoughtline.messages import Message, Origin, Reasoning, Text, ToolResult, tool_results, user

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OPENAI = "https://api.openai.com/v1"
COPILOT = "https://api.githubcopilot.com"


# --- Anthropic: the model check reads "can T read a block O made" ------------------------------


def _claude_turn(made_by: str) -> Message:
    where = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com",
                   model=made_by)
    thought = Reasoning(kind="signed", text="thought", signature=f"sig-by-{made_by}",
                        origin=where)
    return Message(role="assistant", parts=(thought, Text(text="answer")), origin=where)


def _anthropic_body(history: list[Message], target: str) -> bytes:
    plan = replay.plan(ANTHROPIC.resolve("anthropic", None, target))
    return ANTHROPIC.encode_request(history, plan, RequestSpec(model=target)).raw


@pytest.mark.parametrize(("made_by", "target", "sent"), [
    ("claude-opus-5", "claude-fable-5-1", True),  # Fable 5.1 reads Opus 5 (preserved-thinking)
    ("claude-fable-5-1", "claude-opus-5", False),  # ... never the other way round
    ("claude-haiku-5-5", "claude-opus-5", True),  # Haiku 5.5 blocks are not model-locked
    ("claude-opus-5", "claude-haiku-5-5", False),  # ... but Haiku 5.5 drops every foreign one
    ("claude-haiku-5", "claude-opus-5", False),  # older Haiku blocks are model-locked
])
def test_anthropic_scope_is_read_from_origin_to_target(made_by: str, target: str,
                                                       sent: bool) -> None:
    history = [user("q"), _claude_turn(made_by), user("again")]
    body = _anthropic_body(history, target)
    assert (f"sig-by-{made_by}".encode() in body) is sent


# --- Responses: host and family ------------------------------------------------------------------


def _responses_turn(where: Origin) -> Message:
    name = "pydantic-ai-openai-responses-reasoning-tool-calls.i0.response.json"
    response = orjson.loads((FIXTURES / "openai-responses" / name).read_bytes())
    return decode_response(response, where).message


def _responses_body(turn: Message, plan: replay.ReplayPlan) -> bytes:
    history = [user("q"), turn,
               tool_results([ToolResult(call_id=turn.tool_calls[0].id, content="ok")])]
    return orjson.dumps(encode_request(history, plan, model=plan.target.model))


def _encrypted(turn: Message) -> bytes:
    [item] = [p for p in turn.parts if isinstance(p, Reasoning)]
    return item.data.encode()


def test_a_responses_item_from_a_hostless_origin_never_goes_to_a_host() -> None:
    plan = replay.plan(resolve_responses("openai-responses", OPENAI, "gpt-5"))
    assert plan.target.host  # the target is a service with a host
    home = dataclasses.replace(plan.target)
    assert _encrypted(_responses_turn(home)) in _responses_body(_responses_turn(home), plan)
    hostless = dataclasses.replace(home, host="")  # same provider id, no host recorded
    turn = _responses_turn(hostless)
    assert _encrypted(turn) not in _responses_body(turn, plan)


def test_a_responses_item_with_a_host_never_goes_to_a_hostless_target() -> None:
    plan = replay.plan(resolve_responses("openai-responses", OPENAI, "gpt-5"))
    hostless = dataclasses.replace(plan, target=dataclasses.replace(plan.target, host=""))
    turn = _responses_turn(plan.target)
    assert _encrypted(turn) not in _responses_body(turn, hostless)
    same = _responses_turn(hostless.target)  # made there: it may go back there
    assert _encrypted(same) in _responses_body(same, hostless)


@pytest.mark.parametrize(("made_by", "target", "sent"), [
    ("gpt-5", "gpt-5.6", False),
    ("gpt-5.6", "gpt-5", False),
    ("gpt-5", "gpt-5-mini", False),
    ("gpt-5-2025-08-07", "gpt-5", True),  # a dated snapshot is the same family
])
def test_responses_model_families_compare_exactly(made_by: str, target: str,
                                                  sent: bool) -> None:
    plan = replay.plan(resolve_responses("openai-responses", OPENAI, target))
    turn = _responses_turn(dataclasses.replace(plan.target, model=made_by))
    assert (_encrypted(turn) in _responses_body(turn, plan)) is sent


# --- Copilot: its opaque value goes back only where it was made ---------------------------------


def _copilot_turn(where: Origin) -> Message:
    body = {"id": "c1", "object": "chat.completion", "model": where.model, "choices": [{
        "index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "Done.", "reasoning_text": "thinking it over",
            "reasoning_opaque": "COPILOT-OPAQUE+/=="}}]}
    return decode_chat(body, where).message


def _copilot_body(turn: Message, model: str = "claude-sonnet-4.5") -> tuple[Any, bytes]:
    _, plan, body = encode_on([user("q"), turn, user("again")], "copilot", COPILOT, model,
                              producer_rule=True)
    return plan, orjson.dumps(body)


def test_a_copilot_opaque_value_goes_only_to_its_own_origin() -> None:
    plan, _ = _copilot_body(_copilot_turn(Origin(api="openai-chat", provider="copilot",
                                                 model="x")))
    home = plan.target
    assert home.host == "api.githubcopilot.com"
    assert b"COPILOT-OPAQUE" in _copilot_body(_copilot_turn(home))[1]
    for elsewhere in (dataclasses.replace(home, host="relay.example.com"),
                      dataclasses.replace(home, model="gpt-5"),
                      dataclasses.replace(home, model="claude-sonnet-4")):
        raw = _copilot_body(_copilot_turn(elsewhere))[1]
        assert b"COPILOT-OPAQUE" not in raw, elsewhere
