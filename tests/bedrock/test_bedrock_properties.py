"""Properties of the Bedrock encoder over generated histories (hypothesis).

Whatever a history holds — reasoning of every kind from Claude on Anthropic or Bedrock, GPT-5.6,
gpt-oss, DeepSeek-R1, Kimi K3, complete or cut off — each target model receives only what its
policy allows (docs/providers.md "Bedrock"; sources in routes/bedrock.toml), the conversation has
the shape Converse accepts, the stored history is unchanged, and the body survives the store round
trip byte for byte.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from thoughtline import ProviderConfig, Session, open_store, replay
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
from thoughtline.turn import TurnEngine

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


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(history=histories(), target=st.sampled_from(TARGETS), pending_user=st.booleans())
def test_a_resumed_session_splices_its_stored_turns_byte_identical(
        tmp_path_factory: Any, history: list[Message], target: str, pending_user: bool) -> None:
    """Issue 17 on Converse: the turns before the loop are spliced from their stored forms
    (merged by role, opaque blocks located for ``classify``) — byte-identical to a fresh encode,
    nothing decoded; a resume inside a tool loop encodes the loop's turns from the history."""
    provider = ProviderConfig(id="bedrock", api="bedrock", base_url="", model=target,
                              auth="sigv4:bedrock", region="us-east-1")
    # A new question (the loop starts after every stored turn) or none: the request continues
    # the stored history, whose last tool loop is then encoded from the canonical turns.
    pending = [user("and next?")] if pending_user else []
    home = tmp_path_factory.mktemp("bedrock-forms")
    with open_store(home / "state.db", home) as store:
        session = Session.create(store, provider)
        session.append(history)
        resumed = Session.resume(store, session.id)
        plan = TurnEngine.plan(resumed._turn(pending))
        spliced = CODEC.encode_request(replay.answered(resumed.view, pending), plan,
                                       RequestSpec(model=target), resumed.wire_cache)
        fresh = CODEC.encode_request(replay.answered(history, pending), plan,
                                     RequestSpec(model=target))
        assert spliced.raw == orjson.dumps(fresh.body)
        assert CODEC.summary(spliced) == CODEC.summary(fresh)
        sent = spliced.index.sent
        assert tuple(sent) == tuple(fresh.index.sent)  # classify finds each opaque block in place
        if pending_user:  # every generated call is answered: nothing needs the canonical turns
            assert resumed._history.decoded is False


def test_merged_turns_keep_each_opaque_block_where_classify_looks(tmp_path: Any) -> None:
    """Two Claude turns in a row are one Converse message: the second turn's signed block is
    block 2 of it, spliced or not (a rejection names it by that place)."""
    origin = ORIGINS[0]
    turns = [Message(role="assistant", origin=origin, parts=(
        Reasoning(kind="signed", text=f"thought {n}", signature=f"Esig{n}", origin=origin),
        Text(text=f"answer {n}"))) for n in range(2)]
    history = [user("q"), *turns]
    provider = ProviderConfig(id="bedrock", api="bedrock", base_url="", model=CLAUDE,
                              auth="sigv4:bedrock", region="us-east-1")
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, provider)
        session.append(history)
        resumed = Session.resume(store, session.id)
        pending = [user("next")]
        plan = TurnEngine.plan(resumed._turn(pending))
        spliced = CODEC.encode_request(replay.answered(resumed.view, pending), plan,
                                       RequestSpec(model=CLAUDE), resumed.wire_cache)
    assert resumed._history.decoded is False
    assert [(s.message, s.block) for s in spliced.index.sent] == [(1, 0), (1, 2)]
    body = orjson.loads(spliced.raw)
    assert body["messages"][1]["content"][2]["reasoningContent"]["reasoningText"][
        "signature"] == "Esig1"
