"""Replay edges (issue 47 item 1), read from the bytes a request would carry:

- Tool calls answered across two tool messages count as answered; a call never answered gets one
  error result (``replay.UNANSWERED``) before the next message that is not a tool result, and
  only that call (``replay.answered``: providers reject an assistant turn whose calls are not all
  answered, https://platform.openai.com/docs/guides/function-calling and
  https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use).
- A route rule's ``drop_params`` (``routes/openai-chat.toml``, the ``kimi`` keep rule): the
  parameters it lists are absent from the body, every other parameter the client set is sent.
- A provider's signed summary is never capped (``compaction.core.compact_history``: "a native
  block's summary is signed: never capped, never reworded"): its block goes on the wire whole,
  while a summary of our own above the cap is cut where the rule allows and says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import orjson
import pytest

from thoughtline import config, replay
from thoughtline.codecs import registry
from thoughtline.codecs.anthropic.wire import NS as ANTHROPIC_NS
from thoughtline.codecs.base import RequestSpec
from thoughtline.compaction.core import TRUNCATED, compact_history, is_checkpoint
from thoughtline.estimate import Estimator
from thoughtline.messages import (
    Message,
    Opaque,
    Text,
    ToolCall,
    ToolResult,
    tool_results,
    user,
)
from thoughtline.modelconfig import ModelConfig
from thoughtline.turn import TurnEngine, TurnInput


def _turn(provider: str, model: str, history: Sequence[Message],
          params: dict[str, Any] | None = None) -> TurnInput:
    prov = config.provider(provider, model=model)
    return TurnInput(codec=registry.codec(prov.api), provider=prov,
                     config=ModelConfig(provider=prov, params=params or {}),
                     history=tuple(history[:-1]), pending=tuple(history[-1:]))


def _body(turn: TurnInput) -> dict[str, Any]:
    encoded, _ = TurnEngine.build(turn, stream=False)  # what the turn would send now
    return dict(orjson.loads(encoded.raw))


# --- calls left unanswered across two tool messages ---------------------------------------------

CALLS = (ToolCall(id="call_a", name="weather", arguments='{"city": "Paris"}'),
         ToolCall(id="call_b", name="weather", arguments='{"city": "Rome"}'))


def _two_calls(*results: Sequence[str]) -> list[Message]:
    """A question, one turn with two calls, one tool message per entry of ``results`` (the call
    ids it answers), then the next question."""
    out = [user("Weather in Paris and Rome?"), Message(role="assistant", parts=CALLS)]
    out += [tool_results(ToolResult(call_id=c, content=f"sunny in {c}") for c in ids)
            for ids in results]
    return [*out, user("Thanks. And tomorrow?")]


@pytest.mark.parametrize("provider,model", [("deepseek", "deepseek-v4-pro"),
                                            ("openai", "gpt-5")])
def test_calls_answered_across_two_tool_messages_are_answered(provider: str,
                                                              model: str) -> None:
    body = _body(_turn(provider, model, _two_calls(["call_a"], ["call_b"])))
    tools = [m for m in body["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tools] == [
        ("call_a", "sunny in call_a"), ("call_b", "sunny in call_b")]
    assert replay.UNANSWERED.encode() not in orjson.dumps(body)


@pytest.mark.parametrize("provider,model", [("deepseek", "deepseek-v4-pro"),
                                            ("openai", "gpt-5")])
def test_a_call_never_answered_gets_one_error_result_before_the_next_question(
        provider: str, model: str) -> None:
    body = _body(_turn(provider, model, _two_calls(["call_a"])))
    roles = [m["role"] for m in body["messages"]]
    assert roles[-4:] == ["assistant", "tool", "tool", "user"]
    answered, repaired = body["messages"][-3:-1]
    assert (answered["tool_call_id"], answered["content"]) == ("call_a", "sunny in call_a")
    assert (repaired["tool_call_id"], repaired["content"]) == ("call_b", replay.UNANSWERED)


def _results_after_calls(api: str, body: dict[str, Any]) -> list[tuple[str, bool]]:
    """(call id, marked as an error) of every result in the user turn after the calls: the run
    of user messages there (the Messages API combines consecutive user turns into one,
    https://docs.anthropic.com/en/api/messages; Converse takes one message, alternating)."""
    found: list[tuple[str, bool]] = []
    for message in body["messages"][2:]:
        if message["role"] != "user":
            break
        for block in message["content"]:
            if api == "anthropic" and block["type"] == "tool_result":
                found.append((block["tool_use_id"], block.get("is_error", False)))
            elif api == "bedrock" and "toolResult" in block:
                result = block["toolResult"]
                found.append((result["toolUseId"], result["status"] == "error"))
    return found


@pytest.mark.parametrize("provider,model", [
    ("anthropic", "claude-sonnet-4-5"),
    ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")])
def test_results_of_two_tool_messages_and_a_repair_follow_the_calls_as_one_turn(
        provider: str, model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for results, expected in (((["call_a"], ["call_b"]), [("call_a", False), ("call_b", False)]),
                              ((["call_a"],), [("call_a", False), ("call_b", True)])):
        body = _body(_turn(provider, model, _two_calls(*results)))
        assert _results_after_calls(provider, body) == expected, body["messages"]
        if provider == "bedrock":  # strictly alternating: the results and the question, one turn
            assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


# --- a route rule's drop_params -----------------------------------------------------------------

PARAMS = {"reasoning_effort": "high", "temperature": 0.3, "max_tokens": 512}


@pytest.mark.parametrize("model,dropped", [("kimi-k2.6", {"reasoning_effort"}),
                                           ("kimi-k3", set())])
def test_drop_params_removes_what_it_lists_and_nothing_else(model: str,
                                                            dropped: set[str]) -> None:
    body = _body(_turn("kimi", model, [user("hi")], params=PARAMS))
    for name, value in PARAMS.items():
        if name in dropped:
            assert name not in body
        else:
            assert body[name] == value
    assert ("thinking" in body) is bool(dropped)  # the rule's flag replaces what it drops


# --- a provider's signed summary is never capped ------------------------------------------------

CLAUDE = "claude-sonnet-4-5"
LONG_SUMMARY = " ".join(f"Fact {i}: the user keeps note {i} about the harbour." for i in range(60))


def _long_history() -> list[Message]:
    out: list[Message] = []
    for i in range(8):
        out.append(user(f"Note {i}: " + "keep this in mind, it matters later. " * 60))
        out.append(Message(role="assistant", parts=(Text(text=f"Noted {i}."),)))
    return [*out, user("What did I ask you to keep?")]


def _compact(native: bool) -> tuple[Any, Any, Any]:
    prov = config.provider("anthropic", model=CLAUDE)
    codec = registry.codec(prov.api)
    route = codec.resolve(prov.route_id, prov.base_url, CLAUDE)
    plan = replay.plan(route)
    estimator = Estimator.for_config(codec, route, ModelConfig(provider=prov))
    block = Opaque(native={ANTHROPIC_NS: {"type": "compaction", "content": LONG_SUMMARY}},
                   origin=plan.target)
    history = _long_history()

    async def own(prompt: Sequence[Message]) -> tuple[str, str | None]:
        return LONG_SUMMARY, "stop"

    async def provider_block(head: Sequence[Message]) -> tuple[str, Opaque] | None:
        return (LONG_SUMMARY, block) if native else None

    outcome = asyncio.run(compact_history(
        history[:-1], estimator=estimator, summarize=own, native=provider_block, keep=2,
        pending=history[-1:], budget=300, summary_cap=64))
    assert outcome.compacted, outcome.reason
    encoded = codec.encode_request([*outcome.messages, *history[-1:]], plan,
                                   RequestSpec(model=CLAUDE))
    return outcome, block, orjson.loads(encoded.raw)


def test_a_signed_summary_above_the_cap_goes_on_the_wire_whole() -> None:
    outcome, block, body = _compact(native=True)
    (summary,) = [m for m in outcome.messages if is_checkpoint(m)]
    assert "capped the summary" not in outcome.salvaged
    assert TRUNCATED not in summary.text and LONG_SUMMARY in summary.text
    sent = [b for m in body["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "compaction"]
    assert sent == [block.native[ANTHROPIC_NS]]  # the provider's block, whole


def test_our_own_summary_above_the_cap_is_cut_and_says_so() -> None:
    outcome, _, body = _compact(native=False)
    (summary,) = [m for m in outcome.messages if is_checkpoint(m)]
    assert "capped the summary" in outcome.salvaged
    assert summary.text.endswith(TRUNCATED) and LONG_SUMMARY not in summary.text
    assert b'"compaction"' not in orjson.dumps(body)
