"""The cross-provider policy: signed or encrypted reasoning goes back only to the model that
made it.

Signatures and encrypted items are bound to the model that produced them
(docs.anthropic.com/en/docs/build-with-claude/extended-thinking: "blocks from a different model"
fail verification; ai.google.dev/gemini-api/docs/thought-signatures: Gemini signatures are scoped to
the same model; opencode's Copilot chat model: Copilot's opaque blob belongs to its model). When a
session changes model, the earlier turns' opaque values stay home and their readable text travels in
the plain carriers instead.
"""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from thoughtline import replay
from thoughtline.codecs.openai_chat import GEMINI_DUMMY_SIGNATURE, encode_request
from thoughtline.codecs.openai_chat.profile import resolve_chat as resolve
from thoughtline.messages import Message, Origin, Reasoning, Text, ToolCall, user

RC, R, RD = "reasoning_content", "reasoning", "reasoning_details"
CLAUDE = "anthropic/claude-sonnet-4.5"
GPT = "openai/gpt-5"


def _origin(provider: str, model: str) -> Origin:
    return Origin(api="openai-chat", provider=provider, host="", model=model)


def _openrouter_turn(model: str) -> Message:
    origin = _origin("openrouter", model)
    item = {"type": "reasoning.text", "text": "I will look it up.", "signature": "SIG-" + model,
            "format": "anthropic-claude-v1", "index": 0}
    return Message(role="assistant", origin=origin, parts=(
        Reasoning(kind="text", text="I will look it up.", origin=origin),
        Reasoning(kind="signed", text="I will look it up.", signature="SIG-" + model,
                  origin=origin, native={"openrouter": item}),
        Text(text="Checking."),
    ))


def _wire(history: list[Message], provider: str, model: str) -> dict:
    route = resolve(provider, None, model)
    body = encode_request(history, replay.plan(route), model=model)
    (assistant,) = [m for m in orjson.loads(orjson.dumps(body))["messages"]
                    if m["role"] == "assistant"]
    return assistant


def test_same_model_gets_its_signed_items_back() -> None:
    wire = _wire([user("q"), _openrouter_turn(CLAUDE), user("next")], "openrouter", CLAUDE)
    assert wire[RD][0]["signature"] == "SIG-" + CLAUDE


def test_another_model_gets_the_readable_text_but_not_the_signed_items() -> None:
    wire = _wire([user("q"), _openrouter_turn(CLAUDE), user("next")], "openrouter", GPT)
    assert RD not in wire
    assert wire[RC] == wire[R] == "I will look it up."
    assert "SIG-" not in orjson.dumps(wire).decode()


def _gemini_turn(model: str) -> Message:
    origin = _origin("gemini-openai", model)
    call = ToolCall(id="c1", name="lookup", arguments="{}",
                    native={"google": {"thought_signature": "GSIG-call"}})
    return Message(role="assistant", origin=origin, parts=(call,),
                   native={"google": {"thought_signature": "GSIG-text"}})


def test_gemini_signatures_only_to_the_gemini_model_that_made_them() -> None:
    own = _wire([user("q"), _gemini_turn("gemini-3-pro-preview")], "gemini-openai",
                "gemini-3-pro-preview")
    assert own["extra_content"] == {"google": {"thought_signature": "GSIG-text"}}
    assert own["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "GSIG-call"}}
    other = _wire([user("q"), _gemini_turn("gemini-2.5-pro")], "gemini-openai",
                  "gemini-3-pro-preview")
    assert "extra_content" not in other
    # Gemini 3 requires a signature on the first call: a foreign turn gets the documented dummy.
    assert other["tool_calls"][0]["extra_content"] == {
        "google": {"thought_signature": GEMINI_DUMMY_SIGNATURE}}


def test_copilot_opaque_only_to_the_model_that_made_it() -> None:
    origin = _origin("copilot", "claude-sonnet-4.5")
    turn = Message(role="assistant", origin=origin, parts=(Text(text="ok"),),
                   native={"copilot": {"reasoning_text": "hm", "reasoning_opaque": "OPAQUE"}})
    assert _wire([user("q"), turn], "copilot", "claude-sonnet-4.5")["reasoning_opaque"] == "OPAQUE"
    other = _wire([user("q"), turn], "copilot", "gpt-5")
    assert "reasoning_opaque" not in other and "reasoning_text" not in other


def test_a_value_without_origin_is_the_callers_own() -> None:
    turn = _openrouter_turn(CLAUDE)
    bare = Message(role="assistant", parts=tuple(
        Reasoning(kind=p.kind, text=p.text, signature=p.signature, native=p.native)
        if isinstance(p, Reasoning) else p for p in turn.parts))
    wire = _wire([user("q"), bare], "openrouter", GPT)
    assert wire[RD][0]["signature"] == "SIG-" + CLAUDE


MODELS = [CLAUDE, GPT, "google/gemini-3-pro-preview"]


@settings(max_examples=60, deadline=None)
@given(turn_models=st.lists(st.sampled_from(MODELS), min_size=1, max_size=5),
       target=st.sampled_from(MODELS))
def test_no_foreign_opaque_value_ever_reaches_the_wire(turn_models: list[str], target: str) -> None:
    history: list[Message] = []
    for model in turn_models:
        history += [user("q"), _openrouter_turn(model)]
    route = resolve("openrouter", None, target)
    body = orjson.dumps(encode_request(history, replay.plan(route), model=target)).decode()
    for model in set(turn_models):
        assert (("SIG-" + model) in body) is (model == target)
    # readable reasoning of every turn still goes out
    assert body.count('"reasoning_content":"I will look it up."') == len(turn_models)
