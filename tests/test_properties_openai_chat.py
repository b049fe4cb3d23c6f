"""Properties of the Chat Completions encoder over arbitrary histories and arbitrary routes.

(a) an assistant message carries nothing but its role, content, tool calls, the plan's carriers and
    the native keys of the plan's native formats; (b) encoding never mutates the history, cached or
    not; (c) every opaque value that goes out goes out byte-identical; (d) a signature or opaque
    value with no slot on the route never reaches the wire.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_wire import ALL_CARRIERS, COPILOT_KEYS, OUR_KEYS, RC, RD, R, assistants, walk_keys
from thoughtline import replay
from thoughtline.codecs.openai_chat import GEMINI_DUMMY_SIGNATURE, WireCache, encode_request
from thoughtline.codecs.openai_chat.profile import resolve_chat as resolve
from thoughtline.messages import (
    Message,
    Origin,
    Part,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    dumps,
    loads,
)
from thoughtline.replay import ReplayPlan
from thoughtline.routes import Route
from thoughtline.verdicts import Verdict

EXAMPLES = settings(max_examples=150, deadline=None)
MARK = "\x00"  # readable text never contains it, so a marked value is found only where it was put

_CHARS = st.characters(exclude_categories=("Cs",), exclude_characters=MARK)
TEXT = st.text(_CHARS, max_size=24)
_B64 = st.binary(min_size=1, max_size=48)
OPAQUE = st.one_of(
    st.text(_CHARS, min_size=1, max_size=40),  # arbitrary unicode, astral included
    _B64.map(lambda b: base64.b64encode(b).decode()),  # standard, with padding
    _B64.map(lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")),  # url-safe, no padding
    st.sampled_from(["", " ", "=="]),
).map(lambda s: MARK + s)  # marked: an opaque value is never equal to readable text

ORIGINS = st.one_of(st.none(), st.builds(Origin, api=st.sampled_from(["openai-chat", "anthropic"]),
                                         provider=st.sampled_from(["openrouter", "deepseek", "x"]),
                                         model=st.sampled_from(["", "m"])))
RD_FORMATS = ["anthropic-claude-v1", "openai-responses-v1", "google-gemini-v1", "unknown"]


@st.composite
def rd_parts(draw: st.DrawFn) -> Reasoning:
    """A reasoning part holding one OpenRouter reasoning_details item verbatim."""
    item_type = draw(st.sampled_from(["reasoning.text", "reasoning.summary",
                                      "reasoning.encrypted"]))
    item: dict[str, Any] = {"type": item_type}
    if item_type == "reasoning.text":
        item["text"] = draw(TEXT)
        if draw(st.booleans()):
            item["signature"] = draw(OPAQUE)
    elif item_type == "reasoning.summary":
        item["summary"] = draw(TEXT)
    else:
        item["data"] = draw(OPAQUE)
    if draw(st.booleans()):
        item["id"] = draw(st.sampled_from(["rs_1", "rs_2", None]))
    item["format"] = draw(st.sampled_from(RD_FORMATS))
    item["index"] = draw(st.integers(0, 3))
    kind = {"reasoning.summary": "summary", "reasoning.encrypted": "encrypted"}.get(
        item_type, "signed" if item.get("signature") else "text")
    return Reasoning(kind=kind, text=item.get("text"), summary=item.get("summary"),
                     signature=item.get("signature"), data=item.get("data"),
                     complete=draw(st.booleans()), origin=draw(ORIGINS),
                     native={"openrouter": item})


PLAIN_REASONING = st.builds(Reasoning, kind=st.just("text"), text=st.one_of(st.none(), TEXT),
                            complete=st.booleans(), origin=ORIGINS)
# Reasoning from another API (Anthropic thinking, redacted blocks): no Chat Completions slot.
FOREIGN_REASONING = st.builds(
    Reasoning, kind=st.sampled_from(["signed", "redacted"]), text=st.one_of(st.none(), TEXT),
    signature=st.one_of(st.none(), OPAQUE), data=st.one_of(st.none(), OPAQUE),
    complete=st.booleans(), origin=ORIGINS)
MISTRAL_REASONING = TEXT.map(lambda t: Reasoning(kind="text", text=t, native={"mistral": {
    "type": "thinking", "thinking": [{"type": "text", "text": t}]}}))


@st.composite
def tool_calls(draw: st.DrawFn) -> ToolCall:
    native: dict[str, Any] = {}
    if draw(st.booleans()):
        native["google"] = {"thought_signature": draw(OPAQUE)}
    if draw(st.booleans()):
        native["copilot"] = {"thought_signature": draw(OPAQUE)}
    return ToolCall(id=draw(st.text(_CHARS, min_size=1, max_size=8)),
                    name=draw(st.sampled_from(["weather", "time", "search"])),
                    arguments=draw(st.sampled_from(['{}', '{"a": 1}', '{"q":"x y"}', ''])),
                    native=native)


@st.composite
def message_natives(draw: st.DrawFn) -> dict[str, Any]:
    native: dict[str, Any] = {}
    if draw(st.booleans()):
        native["google"] = {"thought": True, "thought_signature": draw(OPAQUE)}
    if draw(st.booleans()):
        native["google-legacy"] = {"thought_signature": draw(OPAQUE)}
    if draw(st.booleans()):
        copilot = {"reasoning_opaque": draw(OPAQUE)}
        if draw(st.booleans()):
            copilot["reasoning_text"] = draw(TEXT)
        native["copilot"] = copilot
    return native


PARTS = st.one_of(PLAIN_REASONING, rd_parts(), FOREIGN_REASONING, MISTRAL_REASONING,
                  TEXT.map(lambda t: Text(text=t)), tool_calls())


@st.composite
def assistant_turns(draw: st.DrawFn) -> Message:
    parts: list[Part] = draw(st.lists(PARTS, max_size=6))
    return Message(role="assistant", parts=tuple(parts), origin=draw(ORIGINS),
                   incomplete=draw(st.booleans()), native=draw(message_natives()))


MESSAGES = st.one_of(
    TEXT.map(lambda t: Message(role="system", parts=(Text(text=t),))),
    TEXT.map(lambda t: Message(role="user", parts=(Text(text=t),))),
    st.lists(st.builds(ToolResult, call_id=st.text(_CHARS, min_size=1, max_size=8),
                       content=TEXT, is_error=st.booleans()), min_size=1, max_size=3).map(
        lambda rs: Message(role="tool", parts=tuple(rs))),
    assistant_turns(), assistant_turns(),
)
HISTORIES = st.lists(MESSAGES, min_size=1, max_size=8)

PROVIDERS = ["deepseek", "openrouter", "kilocode", "ai-gateway", "nous", "novita", "minimax",
             "fireworks", "mistral", "groq", "cerebras", "kimi", "xiaomi", "zai", "dashscope",
             "openai", "gemini-openai", "copilot", "ollama", "vllm", "custom", "acme"]
BASE_URLS = [None, "https://api.groq.com/openai/v1", "https://openrouter.ai/api/v1",
             "http://127.0.0.1:8080/v1", "http://[::1]:1234/v1",
             "https://generativelanguage.googleapis.com/v1beta/openai",
             "https://api.githubcopilot.com", "https://api.deepseek.com",
             "https://api.moonshot.ai/v1", "https://dashscope.aliyuncs.com/compatible-mode/v1",
             "https://api.z.ai/api/paas/v4", "https://llm.example.net/v1",
             "https://openrouter.ai.evil.io/v1"]
MODELS = ["", "deepseek-r1", "gemini-3-pro", "glm-4.7", "glm-5", "kimi-k2.6", "qwen3.6-plus",
          "mimo-v2-flash", "gpt-5", "anthropic/claude-sonnet-4.5", "google/gemini-3-pro-preview"]


@st.composite
def routes_and_plans(draw: st.DrawFn) -> tuple[Route, ReplayPlan]:
    route = resolve(draw(st.sampled_from(PROVIDERS)), draw(st.sampled_from(BASE_URLS)),
                    draw(st.sampled_from(MODELS)),
                    echo=draw(st.sampled_from(["auto", "always", "never"])))
    verdicts = []
    for _ in range(draw(st.integers(0, 2))):
        mine = draw(st.booleans())
        verdicts.append(Verdict(provider=route.provider if mine else "other", host=route.host,
                                model=route.model,
                                drop=frozenset(draw(st.sets(st.sampled_from(sorted(ALL_CARRIERS))))),
                                pad=draw(st.booleans())))
    # Histories here carry arbitrary origins: (a)-(d) check what the route reads, without the
    # producer rule; test_cross_provider_property below checks the rule.
    return route, dataclasses.replace(replay.plan(route, verdicts), target=None)


def _native_keys(plan: ReplayPlan) -> set[str]:
    keys: set[str] = set()
    if "google" in plan.profile.native:
        keys.add("extra_content")
    if "copilot" in plan.profile.native:
        keys |= COPILOT_KEYS
    return keys


def _round_trip(body: dict[str, Any]) -> dict[str, Any]:
    return orjson.loads(orjson.dumps(body))


# --- (a) only the plan's keys --------------------------------------------------------------------

@EXAMPLES
@given(history=HISTORIES, routed=routes_and_plans())
def test_assistant_messages_carry_only_what_the_plan_allows(
        history: list[Message], routed: tuple[Route, ReplayPlan]) -> None:
    _, plan = routed
    body = _round_trip(encode_request(history, plan, model="m"))
    allowed = {"role", "content", "tool_calls"} | plan.profile.carriers | _native_keys(plan)
    for wire in assistants(body):
        assert set(wire) <= allowed
        if RC in wire:
            assert isinstance(wire[RC], str) and wire[RC] != ""
            assert wire[RC].strip() or (plan.profile.pad and wire[RC] == " ")
        elif plan.profile.pad:
            raise AssertionError("a padded route sent an assistant turn without RC")
        if R in wire:
            assert isinstance(wire[R], str) and wire[R].strip()
        if RD in wire:
            assert wire[RD] and all(isinstance(i, dict) for i in wire[RD])
        for call in wire.get("tool_calls") or ():
            call_keys = {"id", "type", "function"}
            if "google" in plan.profile.native:
                call_keys.add("extra_content")
            assert set(call) <= call_keys
            function_keys = {"name", "arguments"}
            if "copilot" in plan.profile.native:
                function_keys.add("thought_signature")
            assert set(call["function"]) <= function_keys
    for wire in body["messages"]:
        if wire["role"] != "assistant":
            assert not (ALL_CARRIERS | COPILOT_KEYS | {"extra_content"}) & wire.keys()
    assert not set(walk_keys(body["messages"])) & OUR_KEYS


# --- (b) history is never mutated -----------------------------------------------------------------

@EXAMPLES
@given(history=HISTORIES, first=routes_and_plans(), second=routes_and_plans())
def test_encoding_never_mutates_history(history: list[Message],
                                        first: tuple[Route, ReplayPlan],
                                        second: tuple[Route, ReplayPlan]) -> None:
    before = [dumps(m) for m in history]
    cache = WireCache()
    plain = orjson.dumps(encode_request(history, first[1], model="m"))
    cached_once = orjson.dumps(encode_request(history, first[1], model="m", cache=cache))
    other = orjson.dumps(encode_request(history, second[1], model="m", cache=cache))
    cached_twice = orjson.dumps(encode_request(history, first[1], model="m", cache=cache))
    assert [dumps(m) for m in history] == before
    assert cached_once == cached_twice == plain
    assert other == orjson.dumps(encode_request(history, second[1], model="m"))
    assert [loads(b) for b in before] == history  # and the stored form still reads back equal


# --- (c) opaque values go out byte-identical, (d) only where they have a slot ------------------

def _opaque_values(message: Message) -> list[str]:
    values: list[str] = []
    for part in message.parts:
        if isinstance(part, Reasoning):
            values += [v for v in (part.signature, part.data) if v]
        if isinstance(part, ToolCall):
            values += [n["thought_signature"] for n in part.native.values()]
    values += [n[k] for n in message.native.values() for k in ("thought_signature",
                                                              "reasoning_opaque") if k in n]
    return values


def _string_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _string_leaves(v)]
    if isinstance(value, list):
        return [s for v in value for s in _string_leaves(v)]
    return []


@EXAMPLES
@given(history=HISTORIES, routed=routes_and_plans())
def test_opaque_values_are_byte_identical_and_only_in_their_slot(
        history: list[Message], routed: tuple[Route, ReplayPlan]) -> None:
    _, plan = routed
    body = _round_trip(encode_request(history, plan, model="m"))
    turns = [m for m in history if m.role == "assistant"]
    wires = assistants(body)
    assert len(turns) == len(wires)
    for turn, wire in zip(turns, wires, strict=True):
        expected: list[str] = []
        items = [p.native["openrouter"] for p in turn.parts if isinstance(p, Reasoning)
                 and p.complete and "openrouter" in p.native]
        if RD in plan.profile.carriers and items:
            assert wire[RD] == items  # verbatim, in order, every key (data/signature included)
            expected += [i[k] for i in items for k in ("data", "signature") if i.get(k)]
        else:
            assert RD not in wire

        # An interrupted turn goes back as plain text: no tool calls, no opaque native values.
        google = "google" in plan.profile.native and not turn.incomplete
        if google and "google" in turn.native:
            assert wire["extra_content"] == {"google": turn.native["google"]}
            expected.append(turn.native["google"]["thought_signature"])
        else:
            assert "extra_content" not in wire

        copilot = turn.native.get("copilot") if "copilot" in plan.profile.native else None
        if copilot and not turn.incomplete:
            assert wire["reasoning_opaque"] == copilot["reasoning_opaque"]
            assert wire.get("reasoning_text") == (copilot.get("reasoning_text") or None)
            expected.append(copilot["reasoning_opaque"])
        else:
            assert not COPILOT_KEYS & wire.keys()

        calls = () if turn.incomplete else turn.tool_calls
        for call, wire_call in zip(calls, wire.get("tool_calls") or (), strict=True):
            assert (wire_call["id"], wire_call["function"]["name"],
                    wire_call["function"]["arguments"]) == (call.id, call.name, call.arguments)
            if google and "google" in call.native:
                assert wire_call["extra_content"] == {"google": call.native["google"]}
                expected.append(call.native["google"]["thought_signature"])
            elif "extra_content" in wire_call:  # a foreign call on Gemini: the documented dummy
                assert wire_call["extra_content"] == {
                    "google": {"thought_signature": GEMINI_DUMMY_SIGNATURE}}
            if "copilot" in plan.profile.native and call.native.get("copilot", {}).get(
                    "thought_signature"):
                signature = call.native["copilot"]["thought_signature"]
                assert wire_call["function"]["thought_signature"] == signature
                expected.append(signature)

        # (d) every opaque value on the wire is one that had its slot; nothing else leaked
        sent = [s for s in _string_leaves(wire) if s.startswith(MARK)]
        assert sorted(sent) == sorted(expected)
        for value in _opaque_values(turn):
            if value not in expected:
                assert value not in sent
