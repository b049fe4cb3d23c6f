"""Properties of the Bedrock encoder over generated histories (hypothesis).

Whatever a history holds — reasoning of every kind from Claude on Anthropic or Bedrock, GPT-5.6,
gpt-oss, DeepSeek-R1, Kimi K3, complete or cut off — each target model receives only what its
policy allows (provider-contracts §7, provider-updates §1c), the conversation has the shape
Converse accepts, the stored history is unchanged, and the body survives the store round trip
byte for byte.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from thoughtline import replay
from thoughtline.codecs.base import RequestSpec
from thoughtline.codecs.bedrock import CODEC
from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    dumps,
    loads,
    tool_results,
    user,
)

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
TARGETS = (CLAUDE, "us.deepseek.r1-v1:0", "us.openai.gpt-5.6-luna", "openai.gpt-oss-120b-1:0",
           "moonshotai.kimi-k3", "amazon.nova-pro-v1:0")
ORIGINS = (
    Origin(api="bedrock", provider="bedrock", model=CLAUDE, region="us-east-1"),
    Origin(api="anthropic", provider="anthropic", model="claude-sonnet-4-5-20250929"),
    Origin(api="anthropic", provider="anthropic", model="claude-opus-4-6"),
    *(Origin(api="bedrock", provider="bedrock", model=m, region="us-east-1")
      for m in TARGETS[1:]),
)

_text = st.text(alphabet="abc xyz", min_size=0, max_size=12)


@st.composite
def reasoning(draw: Any, origin: Origin) -> Reasoning:
    kind = draw(st.sampled_from(["text", "signed", "redacted", "encrypted", "summary"]))
    complete = draw(st.booleans()) or kind in ("redacted", "encrypted")
    if kind == "signed":
        return Reasoning(kind="signed", text=draw(_text), signature="Esig" + draw(_text),
                         complete=complete, origin=origin)
    if kind in ("redacted", "encrypted"):
        return Reasoning(kind=kind, data="RGF0" + draw(_text).replace(" ", ""), origin=origin)
    if kind == "summary":
        return Reasoning(kind="summary", summary=draw(_text), origin=origin)
    return Reasoning(kind="text", text=draw(_text), complete=complete, origin=origin)


@st.composite
def assistant(draw: Any, n: int) -> Message:
    origin = draw(st.sampled_from(ORIGINS))
    parts: list[Any] = draw(st.lists(reasoning(origin), max_size=3))
    if draw(st.booleans()):
        parts.append(Text(text=draw(_text)))
    if draw(st.booleans()):
        parts.append(ToolCall(id=f"call{n}", name="f", arguments='{"a":1}'))
    return Message(role="assistant", parts=tuple(parts), origin=origin)


@st.composite
def histories(draw: Any) -> list[Message]:
    out: list[Message] = [user(draw(_text) or "q")]
    for n in range(draw(st.integers(1, 5))):
        turn = draw(assistant(n))
        out.append(turn)
        if turn.tool_calls:
            out.append(tool_results([ToolResult(call_id=c.id, content=draw(_text))
                                     for c in turn.tool_calls]))
        if draw(st.booleans()):
            out.append(user(draw(_text)))
    return out


def _reasoning_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b["reasoningContent"] for b in message["content"] if "reasoningContent" in b]


@given(histories(), st.sampled_from(TARGETS))
def test_each_model_receives_only_what_its_policy_allows(history: list[Message],
                                                         target: str) -> None:
    before = [dumps(m) for m in history]
    route = CODEC.resolve("bedrock", None, target)
    plan = replay.plan(route, (), region="us-east-1")
    body = CODEC.encode_request(replay.answered(history), plan, RequestSpec(model=target)).body
    assert [dumps(m) for m in history] == before  # stored history never changes
    messages = body["messages"]
    assert messages[0]["role"] == "user" and messages[-1]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(messages))
    for message in messages:
        assert message["content"]
        assert all(b["text"] for b in message["content"] if "text" in b)
        blocks = _reasoning_blocks(message)
        if message["role"] != "assistant":
            assert not blocks
            continue
        assert len(blocks) < len(message["content"])  # never only reasoning
        items = [b["reasoningText"] for b in blocks if "reasoningText" in b]
        redacted = [b for b in blocks if "redactedContent" in b]
        if "claude" in target:
            assert all("signature" in item for item in items)  # never unsigned to Claude
        else:
            assert all("signature" not in item for item in items)  # never a Claude signature
        if "deepseek" in target:
            assert not blocks
        if "gpt-5.6" in target:
            assert not items
        if "gpt-oss" in target or "nova" in target:
            assert not redacted
    # Stored and reloaded, the history gives the same bytes.
    again = CODEC.encode_request(replay.answered([loads(dumps(m)) for m in history]), plan,
                                 RequestSpec(model=target)).body
    assert orjson.dumps(again) == orjson.dumps(body)
