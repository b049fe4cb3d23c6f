"""A model turn with nothing Gemini can read is no content, and no part leaves empty.

A ``Part`` must hold one of ``Part.data`` (the ``Content`` reference,
docs.cloud.google.com/gemini-enterprise-agent-platform/reference/rest/Shared.Types/Content), and
an empty ``text`` holds none: "required oneof field 'data' must have one initialized field"
(router-for-me/CLIProxyAPI#3485, kittors/CliRelay#264). The codec filled a model turn that had
nothing to send — Codex 0.171.0's ``configuration_update`` kept from a Responses client, another
provider's reasoning alone — with ``{"text": ""}``; now such a turn is left out, as the Chat,
Anthropic and Bedrock codecs leave it out, and an unsigned empty text or thought of Gemini's own
turn stays home (a signed one is Gemini's streamed tail and goes back as received).
"""

from __future__ import annotations

from typing import Any

import orjson
from gemini_histories import HISTORIES, PROVIDERS
from hypothesis import given, settings
from hypothesis import strategies as st

from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import RequestSpec
from thoughtline.messages import Message, Opaque, Origin, Reasoning, Text, user
from thoughtline.testing.gemini_rules import check_schema

CODEX = Origin(api="openai-responses", provider="openai", host="api.openai.com",
               model="gpt-6.2-sol")
CLAUDE = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com",
                model="claude-opus-5")
OWN = Origin(api="gemini", provider="gemini", host="generativelanguage.googleapis.com",
             model="gemini-3-pro-preview")
UPDATE = {"type": "configuration_update", "reasoning": {"effort": "low"}}
CONFIGURATION = Message(role="assistant", origin=CODEX,
                        parts=(Opaque(native={"openai-responses": UPDATE}, origin=CODEX),))


def sent(history: list[Message], provider: str = "pro") -> bytes:
    config = PROVIDERS[provider]
    codec = registry.codec("gemini")
    route = codec.resolve(config.route_id, config.base_url, config.model)
    plan = replay.plan(route, account=config.project)
    return codec.encode_request(history, plan, RequestSpec(model=config.model)).raw


def contents(raw: bytes) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = orjson.loads(raw)["contents"]
    return listed


def test_a_configuration_update_after_the_prompt_is_no_model_turn() -> None:
    raw = sent([user("Say hello in one word."), CONFIGURATION])
    assert contents(raw) == [{"role": "user", "parts": [{"text": "Say hello in one word."}]}]
    assert b'"text":""' not in raw and b"configuration_update" not in raw


def test_a_turn_of_nothing_readable_between_prompts_is_left_out() -> None:
    thinking = Message(role="assistant", origin=CLAUDE, parts=(
        Reasoning(kind="text", text="Weighing it.", native={"anthropic": {"signature": "c2ln"}},
                  origin=CLAUDE),))
    for turn in (CONFIGURATION, thinking):
        raw = sent([user("one"), turn, user("two")])
        assert [c["role"] for c in contents(raw)] == ["user", "user"], raw
        assert b'"text":""' not in raw


def test_an_own_turns_unsigned_empty_text_stays_home_a_signed_one_goes_back() -> None:
    turn = Message(role="assistant", origin=OWN, parts=(
        Reasoning(kind="summary", summary=""), Text(text="Hi."), Text(text=""),
        Text(text="", native={"gemini": {"thoughtSignature": "c2lnLWE="}})))
    (model,) = [c for c in contents(sent([user("hello"), turn, user("more")]))
                if c["role"] == "model"]
    assert model["parts"] == [{"text": "Hi."}, {"text": "", "thoughtSignature": "c2lnLWE="}]


@settings(max_examples=200)
@given(history=HISTORIES, provider=st.sampled_from(["pro", "flash", "vertex"]))
def test_every_request_holds_data_in_every_part(history: list[Message], provider: str) -> None:
    """The emulator's schema check (``gemini_rules.check_schema``) over random histories: own
    turns, other providers' and tiers', interrupted and empty ones."""
    raw = sent([*history, user("next")], provider)
    assert check_schema(orjson.loads(raw)) is None, raw
