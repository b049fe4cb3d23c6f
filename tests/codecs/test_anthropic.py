"""The Anthropic Messages codec on every recording in ``tests/fixtures/anthropic`` (sources in
``tests/fixtures/SOURCES.md``): whole and streamed responses fold to the same Message, the
recorded turn-2 requests are reproduced block for block (compared as bytes), and the replay
policy, signature scope, thinking parameters, endpoints and rejection lessons behave as
the extended-thinking and preserved-thinking pages
(docs.anthropic.com/en/docs/build-with-claude/extended-thinking,
platform.claude.com/docs/en/build-with-claude/preserved-thinking) say.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thoughtline import messages as msgs
from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.anthropic import (
    CODEC,
    AnthropicProfile,
    Index,
    decode_response,
    fold,
    part_fingerprint,
)
from thoughtline.codecs.anthropic import models as claude
from thoughtline.codecs.base import Encoded, RequestSpec
from thoughtline.config import ProviderConfig, presets
from thoughtline.errors import ProtocolError, UsageError
from thoughtline.events import ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from thoughtline.messages import (
    Message,
    Opaque,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from thoughtline.wire.cache import WireCache

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "anthropic"
ERRORS = Path(__file__).resolve().parents[1] / "fixtures" / "errors"
WHOLE = sorted(p.name for p in FIXTURES.glob("*.json")
               if "request" not in p.name and "openai-history.i0" not in p.name)
STREAMS = sorted(p.name for p in FIXTURES.iterdir()
                 if p.name.endswith((".sse.txt", ".chunks.txt")))


# --- recording readers (independent of the codec) ----------------------------------------------


def sse_events(path: Path) -> list[tuple[str, Any]]:
    """(event name, JSON payload) of a recorded SSE body; ``chunks.txt`` has payloads only."""
    text = path.read_text("utf-8")
    if path.name.endswith(".chunks.txt"):
        return [("", orjson.loads(line)) for line in text.splitlines() if line.strip()]
    out: list[tuple[str, Any]] = []
    name, data = "", []
    for line in [*text.splitlines(), ""]:
        if not line:
            if data:
                out.append((name, orjson.loads("\n".join(data))))
            name, data = "", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    return out


def reassemble(events: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The whole response a recorded stream describes, rebuilt the simple way (test-side)."""
    body: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    json_text: dict[int, str] = {}
    for _, event in events:
        kind = event["type"]
        if kind == "message_start":
            body = {k: v for k, v in event["message"].items() if k != "content"}
        elif kind == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif kind == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            for field in ("text", "thinking", "signature"):
                if field in delta:
                    block[field] = block.get(field, "") + delta[field]
            if delta["type"] == "input_json_delta":
                json_text[event["index"]] = json_text.get(event["index"], "") + delta[
                    "partial_json"]
        elif kind == "message_delta":
            body.update(event["delta"])
            body["usage"] = {**body.get("usage", {}), **event.get("usage", {})}
    for index, text in json_text.items():
        if text:
            blocks[index]["input"] = json.loads(text)
    body["content"] = [blocks[i] for i in sorted(blocks)]
    return body


def synthesize_stream(body: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """The SSE events the API sends for a whole response (streaming docs, and the shapes of
    the recorded streams): empty block shells, deltas in pieces, the signature last."""
    shell = {k: v for k, v in body.items() if k not in ("content", "stop_reason")}
    yield "message_start", {"type": "message_start", "message": {**shell, "content": []}}
    for index, block in enumerate(body["content"]):
        kind = block["type"]
        start: dict[str, Any] = dict(block)
        deltas: list[dict[str, Any]] = []
        if kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            text = block["thinking"]
            deltas = [{"type": "thinking_delta", "thinking": text[i:i + 7]}
                      for i in range(0, len(text), 7)]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"][i:i + 5]}
                      for i in range(0, len(block["text"]), 5)]
        elif kind in ("tool_use", "server_tool_use"):
            start = {**block, "input": {}}
            spaced = json.dumps(block["input"])  # the API's own spacing, unlike ours
            deltas = [{"type": "input_json_delta", "partial_json": spaced[i:i + 4]}
                      for i in range(0, len(spaced), 4)] or [
                {"type": "input_json_delta", "partial_json": ""}]
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": start}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": body["stop_reason"]},
                            "usage": body.get("usage", {})}
    yield "message_stop", {"type": "message_stop"}


def origin(model: str = "claude-sonnet-4-5", provider: str = "anthropic",
           host: str = "api.anthropic.com", account: str = "", api: str = "anthropic") -> Origin:
    return Origin(api=api, provider=provider, host=host, model=model, account=account)


def plan_for(model: str, provider: str = "anthropic", base_url: str | None = None,
             fingerprints: frozenset[str] = frozenset(), account: str = "",
             settings: Mapping[str, Any] | None = None) -> replay.ReplayPlan:
    route = CODEC.resolve(provider, base_url, model)
    return replay.plan(route, (), fingerprints=fingerprints, account=account, settings=settings)


def body_of(history: Sequence[Message], plan: replay.ReplayPlan, model: str,
            **spec: Any) -> dict[str, Any]:
    return dict(CODEC.encode_request(history, plan, RequestSpec(model=model, **spec)).body)


def sorted_bytes(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


# --- whole and streamed responses fold to the same Message ----------------------------------------


@pytest.mark.parametrize("name", WHOLE)
def test_a_whole_response_and_its_stream_fold_to_the_same_message(name: str) -> None:
    body = orjson.loads((FIXTURES / name).read_bytes())
    who = origin(body["model"])
    whole = decode_response(body, who)
    streamed = fold(synthesize_stream(body), who)
    assert msgs.dumps(streamed.message) == msgs.dumps(whole.message)
    assert streamed.finish == whole.finish and streamed.usage == whole.usage
    assert streamed.reports == whole.reports


@pytest.mark.parametrize("name", STREAMS)
def test_a_recorded_stream_folds_to_its_reassembled_whole_response(name: str) -> None:
    events = sse_events(FIXTURES / name)
    whole = reassemble(events)
    who = origin(whole.get("model", "claude"))
    streamed = fold(events, who)
    assert msgs.dumps(streamed.message) == msgs.dumps(decode_response(whole, who).message)
    assert streamed.finish is not None
    assert not streamed.message.incomplete


@pytest.mark.parametrize("name", STREAMS)
def test_streamed_signatures_and_data_are_the_recorded_bytes(name: str) -> None:
    raw = (FIXTURES / name).read_text("utf-8")
    message = fold(sse_events(FIXTURES / name), origin()).message
    for part in message.reasoning:
        value = part.signature or part.data
        assert value and f'"{value}"' in raw  # one delta or one start, verbatim
        assert part.complete


def test_an_empty_text_signed_block_is_kept_streamed_and_whole() -> None:
    # Sonnet 5: the block opens empty and gets only a signature_delta (SOURCES.md, second pass).
    streamed = fold(sse_events(
        FIXTURES / "pydantic-ai-anthropic-sonnet5-empty-thinking-signature-only-stream.i0"
                   ".response.sse.txt"), origin("claude-sonnet-5")).message
    first = streamed.parts[0]
    assert isinstance(first, Reasoning) and first.kind == "signed" and first.text == ""
    assert first.signature and first.signature.startswith("EpADCokB")
    assert [type(p).__name__ for p in streamed.parts] == [
        "Reasoning", "Text", "Opaque", "Opaque", "Text"]
    whole = decode_response(orjson.loads((
        FIXTURES / "pydantic-ai-anthropic-fable51-drops-stale-thinking.i0.response.json")
        .read_bytes()), origin("claude-fable-5-1")).message
    assert whole.parts[0] == Reasoning(kind="signed", text="", signature=whole.parts[0].signature,
                                       origin=origin("claude-fable-5-1"))


def test_redacted_blocks_keep_their_data_and_order() -> None:
    message = fold(sse_events(FIXTURES / "pydantic-ai-anthropic-redacted-thinking-stream.i0"
                                         ".response.sse.txt"), origin()).message
    kinds = [(type(p).__name__, getattr(p, "kind", "")) for p in message.parts]
    assert kinds == [("Reasoning", "redacted"), ("Reasoning", "redacted"), ("Text", "")]
    assert message.parts[0].data.startswith("EqkECkYIBxgCKkA8")


def test_stream_events_show_thinking_text_and_tool_arguments() -> None:
    events = sse_events(FIXTURES / "fantasy-anthropic-thinking-tool-use-stream.i0.response.sse.txt")
    state = CODEC.new_fold(origin("claude-sonnet-4"))
    shown = [e for name, payload in events for e in state.add_event(name, payload)]
    assert any(isinstance(e, ReasoningDelta) for e in shown)
    started = [e for e in shown if isinstance(e, ToolCallStarted)]
    assert len(started) == 1 and started[0].name == "weather"
    arguments = "".join(e.text for e in shown if isinstance(e, ToolCallDelta))
    done = state.finish()
    call = done.message.tool_calls[0]
    assert json.loads(arguments) == json.loads(call.arguments)
    assert call.arguments == orjson.dumps(json.loads(arguments)).decode()  # compact, once
    assert state.finished and done.finish == "tool_calls"
    assert not any(isinstance(e, TextDelta) for e in shown[:1])


def test_a_stream_cut_before_the_signature_is_incomplete_and_never_signed() -> None:
    events = sse_events(FIXTURES / "pydantic-ai-anthropic-thinking-stream.i0.response.sse.txt")
    cut = [e for e in events if not (e[1]["type"] == "content_block_delta"
                                     and e[1]["delta"]["type"] == "signature_delta")]
    stop = next(i for i, e in enumerate(cut) if e[1]["type"] == "content_block_stop")
    state = CODEC.new_fold(origin())
    for name, payload in cut[:stop]:
        state.add_event(name, payload)
    message = state.finish(complete=False).message
    part = message.parts[0]
    assert isinstance(part, Reasoning) and not part.complete and part.signature is None
    assert message.incomplete
    body = body_of([msgs.user("hi"), message, msgs.user("again")],
                   plan_for("claude-sonnet-4-5"), "claude-sonnet-4-5")
    assert all(b["type"] != "thinking" for m in body["messages"] for b in m["content"])


def test_input_transformations_are_reports_whole_and_streamed() -> None:
    whole = decode_response(orjson.loads((
        FIXTURES / "pydantic-ai-anthropic-fable51-drops-stale-thinking.i1.response.json")
        .read_bytes()), origin("claude-fable-5-1"))
    streamed = fold(sse_events(FIXTURES / "pydantic-ai-anthropic-fable51-drops-stale-thinking"
                                          "-stream.i1.response.sse.txt"), origin())
    expected = {"type": "thinking_dropped", "path": "messages.1.content.0",
                "reason": "prefix_binding_mismatch"}
    assert whole.reports == streamed.reports
    assert [dict(r) for r in whole.reports] == [expected]


def test_an_error_event_and_a_non_message_body_raise_protocol_errors() -> None:
    with pytest.raises(ProtocolError):
        fold([("error", {"type": "error", "error": {"type": "overloaded_error"}})], origin())
    with pytest.raises(ProtocolError):
        decode_response({"type": "error", "error": {"message": "nope"}}, origin())


# --- the recorded turn-2 requests ----------------------------------------------------------------

REPLAYS = [
    ("fantasy-anthropic-thinking-tool-use", "i0.response.json"),
    ("fantasy-anthropic-thinking-tool-use-stream", "i0.response.sse.txt"),
    ("llm-anthropic-haiku45-thinking-display-summarized-tool-stream", "i0.response.sse.txt"),
    ("pydantic-ai-anthropic-fable51-drops-stale-thinking", "i0.response.json"),
    ("pydantic-ai-anthropic-fable51-drops-stale-thinking-stream", "i0.response.json"),
    ("pydantic-ai-anthropic-redacted-thinking", "i0.response.json"),
    ("pydantic-ai-anthropic-sonnet5-empty-thinking-replay", "i0.response.json"),
    ("pydantic-ai-anthropic-thinking-part", "i0.response.json"),
    ("pydantic-ai-anthropic-tool-with-thinking", "i0.response.json"),
]


def _history_from_recording(request: Mapping[str, Any], turn: Message) -> list[Message]:
    """Turn 1 as our canonical history: the recorded user turns around our decoded answer."""
    history: list[Message] = []
    for wire in request["messages"]:
        if wire["role"] == "assistant":
            history.append(turn)
            continue
        results = [b for b in wire["content"] if b["type"] == "tool_result"]
        if results:
            history.append(msgs.tool_results(ToolResult(
                call_id=b["tool_use_id"], content=json.dumps(b["content"]),
                is_error=bool(b.get("is_error"))) for b in results))
        else:
            history.append(msgs.user("".join(b["text"] for b in wire["content"])))
    return history


@pytest.mark.parametrize(("name", "first"), REPLAYS)
def test_turn_two_replays_the_recorded_blocks_byte_for_byte(name: str, first: str) -> None:
    request = orjson.loads((FIXTURES / f"{name}.i1.request.json").read_bytes())
    model = request["model"]
    who = origin(model)
    path = FIXTURES / f"{name}.{first}"
    if first.endswith(".sse.txt"):
        turn = fold(sse_events(path), who).message
    else:
        turn = decode_response(orjson.loads(path.read_bytes()), who).message
    stored = msgs.loads(msgs.dumps(turn))  # through the store's lossless form first
    history = _history_from_recording(request, stored)
    body = body_of(history, plan_for(model), model)
    ours = next(m for m in body["messages"] if m["role"] == "assistant")["content"]
    recorded = next(m for m in request["messages"] if m["role"] == "assistant")["content"]
    # The recorders re-serialised bodies with sorted keys (SOURCES.md): compare sorted bytes.
    assert [sorted_bytes(b) for b in ours] == [sorted_bytes(b) for b in recorded]
    for mine, theirs in zip(ours, recorded, strict=True):
        if mine["type"] in ("thinking", "redacted_thinking"):
            assert orjson.dumps(mine.get("signature") or mine.get("data")) == orjson.dumps(
                theirs.get("signature") or theirs.get("data"))
    if name.startswith("llm-anthropic"):  # this recorder kept the wire's key order
        assert [orjson.dumps(b) for b in ours] == [orjson.dumps(b) for b in recorded]


def test_the_recorded_drop_path_maps_back_to_the_stored_block() -> None:
    request = orjson.loads((FIXTURES / "pydantic-ai-anthropic-fable51-drops-stale-thinking.i1"
                                       ".request.json").read_bytes())
    turn = decode_response(orjson.loads((FIXTURES / "pydantic-ai-anthropic-fable51-drops-stale"
                                                    "-thinking.i0.response.json").read_bytes()),
                           origin("claude-fable-5-1")).message
    history = _history_from_recording(request, turn)
    plan = plan_for("claude-fable-5-1")
    encoded = CODEC.encode_request(history, plan, RequestSpec(model="claude-fable-5-1"))
    done = decode_response(orjson.loads((FIXTURES / "pydantic-ai-anthropic-fable51-drops-stale"
                                                    "-thinking.i1.response.json").read_bytes()),
                           origin("claude-fable-5-1"))
    lesson = CODEC.reported(done, encoded, plan)
    assert lesson is not None
    assert lesson.fingerprints == {part_fingerprint(turn.parts[0])}
    assert "messages.1.content.0" in lesson.notice
    again = plan_for("claude-fable-5-1", fingerprints=lesson.fingerprints)
    resent = body_of(history, again, "claude-fable-5-1")
    assert all(b["type"] != "thinking" for m in resent["messages"] for b in m["content"])


# --- replay policy -------------------------------------------------------------------------------


def _signed(n: int, model: str, **where: Any) -> Reasoning:
    return Reasoning(kind="signed", text=f"thought {n}", signature=f"sig-{n}",
                     origin=origin(model, **where))


def _turn(n: int, model: str, *, call: bool = False, **where: Any) -> Message:
    parts: list[Any] = [_signed(n, model, **where), Text(text=f"answer {n}")]
    if call:
        parts.append(ToolCall(id=f"call-{n}", name="f", arguments='{"n":1}'))
    return Message(role="assistant", parts=tuple(parts), origin=origin(model, **where))


def _signatures(body: Mapping[str, Any]) -> list[str]:
    return [b["signature"] for m in body["messages"] for b in m["content"]
            if b["type"] == "thinking" and "signature" in b]


def _conversation(model: str, **where: Any) -> list[Message]:
    return [msgs.user("one"), _turn(1, model, **where), msgs.user("two"),
            _turn(2, model, **where), msgs.user("three"), _turn(3, model, call=True, **where),
            msgs.tool_results([ToolResult(call_id="call-3", content="ok")])]


@pytest.mark.parametrize(("model", "expected"), [
    ("claude-sonnet-4-5", ["sig-3"]),  # older: only the last assistant turn (here in the loop)
    ("claude-opus-4-1", ["sig-3"]),
    ("claude-3-7-sonnet-20250219", ["sig-3"]),
    ("claude-opus-4-5", ["sig-1", "sig-2", "sig-3"]),
    ("claude-sonnet-4-6", ["sig-1", "sig-2", "sig-3"]),
    ("claude-haiku-5-5", ["sig-1", "sig-2", "sig-3"]),
    ("claude-fable-5-1", ["sig-1", "sig-2", "sig-3"]),
    ("claude-mythos-preview", ["sig-1", "sig-2", "sig-3"]),  # unparseable Claude id: kept
])
def test_earlier_turns_follow_the_model_rule_and_the_loop_is_always_kept(
        model: str, expected: list[str]) -> None:
    body = body_of(_conversation(model), plan_for(model), model)
    assert _signatures(body) == expected


def test_the_last_assistant_turn_keeps_its_thinking_on_an_older_model() -> None:
    history = [msgs.user("one"), _turn(1, "claude-sonnet-4-5"), msgs.user("two"),
               _turn(2, "claude-sonnet-4-5"), msgs.user("three")]
    assert _signatures(body_of(history, plan_for("claude-sonnet-4-5"),
                               "claude-sonnet-4-5")) == ["sig-2"]


def test_a_claude_signature_never_goes_to_a_non_claude_model_or_another_model() -> None:
    history = _conversation("claude-sonnet-4-5")
    assert _signatures(body_of(history, plan_for("claude-opus-4-5"), "claude-opus-4-5")) == []
    for provider, base in (("minimax-anthropic", "https://api.minimax.io/anthropic"),
                           ("custom", "https://relay.example/anthropic")):
        body = body_of(history, plan_for("MiniMax-M2", provider, base), "MiniMax-M2")
        assert all(b["type"] not in ("thinking", "redacted_thinking")
                   for m in body["messages"] for b in m["content"])


def test_platform_ids_of_one_model_share_the_scope() -> None:
    made = _conversation("claude-sonnet-4-5", provider="vertex-anthropic",
                         host="us-east5-aiplatform.googleapis.com")
    bedrock = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert claude.normalize(bedrock) == claude.normalize("claude-sonnet-4-5@20250929")
    assert "sig-3" in _signatures(body_of(made, plan_for(bedrock), bedrock))


def test_scope_follows_the_documented_model_and_account_checks() -> None:
    profile = CODEC.resolve("anthropic", None, "claude-fable-5-1").profile
    target = origin("claude-fable-5-1")
    assert profile.accepts(origin("claude-opus-5"), target)  # Fable 5.1 reads Opus 5
    assert profile.accepts(origin("claude-opus-5-5"), target)  # … and Opus 5.5 on the API
    assert not profile.accepts(origin("claude-fable-5-1"), origin("claude-opus-5"))
    assert not profile.accepts(origin("claude-sonnet-4-5"), target)
    # Sonnet 5.5 blocks are bound to the account that made them.
    sonnet = origin("claude-sonnet-5-5", account="org-a")
    assert profile.accepts(sonnet, origin("claude-sonnet-5-5", account="org-a"))
    assert not profile.accepts(sonnet, origin("claude-sonnet-5-5", account="org-b"))
    # Bedrock's organisation check: only blocks minted in the same AWS account.
    bedrock = CODEC.resolve("bedrock-anthropic", None, "claude-opus-4-6").profile
    here = origin("claude-opus-4-6", "bedrock-anthropic", "bedrock-runtime.us-east-1."
                  "amazonaws.com", account="111")
    assert bedrock.accepts(here, here)
    assert not bedrock.accepts(origin("claude-opus-4-6", account="111"), here)
    assert bedrock.accepts(origin("anthropic.claude-opus-4-6-v1", "bedrock", account="111",
                                  api="bedrock"), here)
    # Haiku 5.5 drops every foreign block.
    assert not profile.accepts(origin("claude-opus-5"), origin("claude-haiku-5-5"))


def test_deepseek_keeps_unsigned_thinking_and_strips_signed_and_redacted() -> None:
    unsigned = Message(role="assistant", origin=origin("deepseek-v4", "deepseek-anthropic"),
                       parts=(Reasoning(kind="text", text="plain thought"),
                              Reasoning(kind="redacted", data="xyz"), Text(text="a")))
    history = [msgs.user("q"), _turn(1, "claude-sonnet-4-5"), msgs.user("q2"), unsigned,
               msgs.user("q3")]
    body = body_of(history, plan_for("deepseek-v4", "deepseek-anthropic",
                                     "https://api.deepseek.com/anthropic"), "deepseek-v4")
    thinking = [b for m in body["messages"] for b in m["content"] if b["type"] != "text"]
    assert thinking == [{"type": "thinking", "thinking": "thought 1"},
                        {"type": "thinking", "thinking": "plain thought"}]


def test_a_rejected_fingerprint_is_left_out_and_everything_else_replays() -> None:
    history = _conversation("claude-opus-4-5")
    bad = part_fingerprint(history[3].parts[0])
    kept = _signatures(body_of(history, plan_for("claude-opus-4-5", fingerprints=frozenset({bad})),
                               "claude-opus-4-5"))
    assert kept == ["sig-1", "sig-3"]


def test_on_a_binding_model_a_gap_in_the_middle_cuts_the_rest_of_the_chain() -> None:
    history = _conversation("claude-fable-5-1")
    bad = part_fingerprint(history[3].parts[0])
    plan = plan_for("claude-fable-5-1", fingerprints=frozenset({bad}))
    assert _signatures(body_of(history, plan, "claude-fable-5-1")) == ["sig-1"]
    first = part_fingerprint(history[1].parts[0])  # from the start: the rest still binds
    plan = plan_for("claude-fable-5-1", fingerprints=frozenset({first}))
    assert _signatures(body_of(history, plan, "claude-fable-5-1")) == ["sig-2", "sig-3"]


def test_the_wire_cache_gives_the_same_body_and_history_is_never_mutated() -> None:
    history = _conversation("claude-fable-5-1")
    before = [msgs.dumps(m) for m in history]
    plan = plan_for("claude-fable-5-1", settings={"prefix_mismatch_behavior": "drop_block"})
    cache = WireCache()  # the core's, which a session holds
    spec = RequestSpec(model="claude-fable-5-1", tools=(ToolSpec(name="f"),), stream=True)
    first = orjson.dumps(CODEC.encode_request(history, plan, spec, cache).body)
    second = orjson.dumps(CODEC.encode_request(history, plan, spec, cache).body)
    cold = orjson.dumps(CODEC.encode_request(history, plan, spec).body)
    assert first == second == cold and len(cache) == len(history)  # every stored message
    assert [msgs.dumps(m) for m in history] == before
    body = orjson.loads(first)
    assert body["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    with pytest.raises(TypeError):
        CODEC.encode_request(history, plan, spec).body["messages"][1]["content"][0]["x"] = 1


def test_opaque_server_tool_blocks_replay_verbatim_in_place() -> None:
    body = orjson.loads((FIXTURES / "pydantic-ai-anthropic-sonnet5-empty-thinking-replay.i0"
                                    ".response.json").read_bytes())
    turn = decode_response(body, origin("claude-sonnet-5")).message
    assert isinstance(turn.parts[2], Opaque) and turn.parts[2].native["anthropic"] == body[
        "content"][2]
    out = body_of([msgs.user("q"), turn, msgs.user("q2")], plan_for("claude-sonnet-5"),
                  "claude-sonnet-5")
    assert orjson.dumps(out["messages"][1]["content"][3]) == orjson.dumps(body["content"][3])


# --- thinking parameters -------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "params", "thinking", "extra"), [
    ("claude-fable-5-1", {"reasoning_effort": "high"}, {"type": "adaptive"},
     {"output_config": {"effort": "high"}}),
    ("claude-opus-4-6", {}, {"type": "adaptive"}, {}),
    ("claude-sonnet-4-5", {"reasoning_effort": "low"},
     {"type": "enabled", "budget_tokens": 2048}, {}),
    ("claude-3-7-sonnet-latest", {"thinking_budget": 5000},
     {"type": "enabled", "budget_tokens": 5000}, {}),
    ("claude-haiku-5-5", {"thinking": "disabled"}, {"type": "disabled"}, {}),
])
def test_thinking_parameters_per_family(model: str, params: dict[str, Any],
                                        thinking: dict[str, Any], extra: dict[str, Any]) -> None:
    body = body_of([msgs.user("q")], plan_for(model), model, params=params)
    assert body["thinking"] == thinking
    for key, value in extra.items():
        assert body[key] == value
    assert body["max_tokens"] > thinking.get("budget_tokens", 0)


@pytest.mark.parametrize(("model", "params"), [
    ("claude-opus-5-5", {"thinking": "disabled"}),
    ("claude-fable-5-1", {"thinking_budget": 2000}),
    ("claude-fable-5-1", {"tool_choice": {"type": "any"}}),
    ("claude-sonnet-4-5", {"temperature": 0.2}),
    ("claude-opus-4-6", {"reasoning_effort": "xhigh"}),
    ("claude-sonnet-4-5", {"thinking_budget": 9000, "max_tokens": 4000}),
    ("claude-sonnet-4-5", {"reasoning_effort": "extreme"}),
])
def test_what_a_model_rejects_is_a_usage_error_before_sending(model: str,
                                                              params: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        body_of([msgs.user("q")], plan_for(model), model, params=params)


def test_unknown_params_pass_through_and_the_binding_setting_only_goes_to_binding_models() -> None:
    settings = {"prefix_mismatch_behavior": "drop_block"}
    body = body_of([msgs.user("q")], plan_for("claude-sonnet-4-5", settings=settings),
                   "claude-sonnet-4-5", params={"stop_sequences": ["x"]})
    assert body["stop_sequences"] == ["x"] and "block_binding" not in body["thinking"]


# --- endpoints, headers, presets -----------------------------------------------------------------


def _provider(preset: str, **changes: Any) -> ProviderConfig:
    from dataclasses import replace

    return replace(presets()[preset], **changes)


@pytest.mark.parametrize(("preset", "changes", "stream", "url"), [
    ("anthropic", {}, True, "https://api.anthropic.com/v1/messages"),
    ("anthropic", {"base_url": "http://127.0.0.1:9/v1"}, False, "http://127.0.0.1:9/v1/messages"),
    ("foundry", {"base_url": "https://res.services.ai.azure.com/anthropic"}, False,
     "https://res.services.ai.azure.com/anthropic/v1/messages"),
    ("bedrock-anthropic", {"region": "us-west-2"}, True,
     "https://bedrock-runtime.us-west-2.amazonaws.com/anthropic/v1/messages"),
    ("vertex-anthropic", {"project": "p1", "region": "us-east5"}, True,
     "https://us-east5-aiplatform.googleapis.com/v1/projects/p1/locations/us-east5/publishers/"
     "anthropic/models/claude-sonnet-4-5:streamRawPredict"),
    ("vertex-anthropic", {"project": "p1", "region": "global"}, False,
     "https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/anthropic/"
     "models/claude-sonnet-4-5:rawPredict"),
])
def test_endpoints(preset: str, changes: dict[str, Any], stream: bool, url: str) -> None:
    endpoint = CODEC.endpoint(_provider(preset, **changes), "claude-sonnet-4-5", stream=stream)
    assert endpoint.url == url and endpoint.framing == ("sse" if stream else "json")


def test_vertex_bodies_carry_the_version_and_no_model() -> None:
    plan = plan_for("claude-sonnet-4-5", "vertex-anthropic")
    body = body_of([msgs.user("q")], plan, "claude-sonnet-4-5")
    assert body["anthropic_version"] == "vertex-2023-10-16" and "model" not in body
    assert "anthropic-version" not in CODEC.endpoint(
        _provider("vertex-anthropic", project="p"), "claude-sonnet-4-5", stream=False).headers


def test_headers_pass_the_clients_version_through_and_add_the_betas_a_model_needs() -> None:
    given = _provider("anthropic", headers={"anthropic-version": "2026-10-21",
                                            "anthropic-beta": "files-api-2025-04-14"})
    headers = CODEC.endpoint(given, "claude-fable-5-1", stream=True).headers
    assert headers["anthropic-version"] == "2026-10-21"
    assert headers["anthropic-beta"] == "files-api-2025-04-14,thinking-binding-controls-2026-08-01"
    bedrock = CODEC.endpoint(_provider("bedrock-anthropic", region="eu-west-1"),
                             "claude-opus-4-1", stream=False).headers
    assert "anthropic-version" not in bedrock  # not pinned on Bedrock (inference-messages-api)
    assert bedrock["anthropic-beta"] == "interleaved-thinking-2025-05-14"


def test_presets_and_auth_schemes() -> None:
    expected = {"anthropic": "x-api-key", "vertex-anthropic": "google-oauth", "foundry": "api-key",
                "bedrock-anthropic": "sigv4:bedrock", "minimax-anthropic": "x-api-key",
                "kimi-coding": "x-api-key", "deepseek-anthropic": "x-api-key"}
    for preset, scheme in expected.items():
        provider = presets()[preset]
        assert provider.api == "anthropic"
        assert CODEC.auth_scheme(provider) == scheme
        assert CODEC.resolve(provider.route_id, provider.base_url, provider.model).row != "relay"
    assert registry.codec("anthropic") is CODEC


def test_route_rows_by_host_and_path() -> None:
    rows = {
        ("custom", "https://us-central1-aiplatform.googleapis.com"): "vertex",
        ("custom", "https://aiplatform.eu.rep.googleapis.com/v1"): "vertex",
        ("custom", "https://res.services.ai.azure.com/anthropic"): "foundry",
        ("custom", "https://res.services.ai.azure.com/openai"): "relay",
        ("custom", "https://bedrock-mantle.us-east-1.api.aws/anthropic"): "bedrock-messages",
        ("custom", "https://api.minimaxi.com/anthropic"): "minimax",
        ("custom", "https://api.deepseek.com/anthropic"): "deepseek",
        ("custom", "https://api.kimi.com/coding"): "kimi",
        ("custom", "https://api.anthropic.com.evil.io"): "relay",
        ("anthropic", None): "anthropic",
    }
    for (provider, base), row in rows.items():
        assert CODEC.resolve(provider, base, "m").row == row, (provider, base)
    profile = CODEC.resolve("anthropic", None, "m").profile
    assert isinstance(profile, AnthropicProfile) and hash(profile)
    assert profile.public_json()["thinking_replay"] == "signed"


# --- rejections ----------------------------------------------------------------------------------


def _rejection(message: str) -> str:
    return orjson.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": message}}).decode()


def _encoded(model: str = "claude-opus-4-5") -> tuple[Encoded, replay.ReplayPlan, list[Message]]:
    history = _conversation(model)
    history.insert(3, Message(role="assistant", origin=origin(model), parts=(
        Reasoning(kind="redacted", data="REDACTED==", origin=origin(model)), Text(text="r"))))
    history.insert(4, msgs.user("after redacted"))
    plan = plan_for(model)
    return CODEC.encode_request(history, plan, RequestSpec(model=model)), plan, history


@pytest.mark.parametrize(("message", "part"), [
    ("messages.1.content.0: Invalid `signature` in `thinking` block", (1, 0)),
    ("messages.3.content.0: Invalid 'data' in 'redacted_thinking' block", (3, 0)),
    ("messages.5.content.0.thinking.signature: Field required", (5, 0)),
    ("messages.7.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant "
     "message cannot be modified. These blocks must remain as they were in the original "
     "response.", (7, 0)),
])
def test_each_documented_wording_teaches_one_fingerprint(message: str,
                                                         part: tuple[int, int]) -> None:
    encoded, plan, history = _encoded()
    assert isinstance(encoded.index, Index)
    lesson = CODEC.classify(400, _rejection(message), encoded, plan)
    assert lesson is not None and not lesson.settings
    wire = encoded.index.parts[part]
    assert lesson.fingerprints == {part_fingerprint(history[wire[0]].parts[wire[1]])}
    learned = replay.ReplayPlan(profile=plan.profile, target=plan.target,
                                fingerprints=lesson.fingerprints)
    assert CODEC.classify(400, _rejection(message), encoded, learned) is None  # once only


_THINKING_PARTS = st.builds(
    Reasoning, kind=st.sampled_from(["thinking", "redacted"]),
    text=st.sampled_from([None, "", "mulling", "more"]),
    signature=st.sampled_from([None, "", "sig-a", "sig-b"]),
    data=st.sampled_from([None, "DATA=="]), complete=st.booleans(),
    origin=st.sampled_from([None, origin("claude-opus-4-5"),
                            origin("claude-opus-4-5", provider="kimi-coding",
                                   host="api.kimi.com")]))


@settings(max_examples=150, deadline=None)
@given(turns=st.lists(st.lists(_THINKING_PARTS, min_size=1, max_size=3), min_size=1,
                      max_size=3),
       provider=st.sampled_from(["anthropic", "kimi-coding", "deepseek-anthropic"]))
def test_every_thinking_block_sent_has_its_parts_fingerprint(
        turns: list[list[Reasoning]], provider: str) -> None:
    # A rejection names a block by its place; the lesson is the fingerprint of the part behind
    # it, read from the block as sent or, for a signed part sent without its signature, kept.
    model = "claude-opus-4-5"
    history: list[Message] = []
    for number, parts in enumerate(turns):
        history += [msgs.user(f"q{number}"), Message(role="assistant", origin=origin(model),
                                                    parts=(*parts, Text(text="a")))]
    history.append(msgs.user("next"))
    plan = plan_for(model, provider)
    encoded = CODEC.encode_request(history, plan, RequestSpec(model=model))
    assert isinstance(encoded.index, Index)
    blocks = encoded.body["messages"]
    expected = {}
    for location, (turn, part) in encoded.index.parts.items():
        found = history[turn].parts[part]
        if isinstance(found, Reasoning):
            expected[location] = part_fingerprint(found)
            assert blocks[location[0]]["content"][location[1]]["type"] in (
                "thinking", "redacted_thinking")
    assert encoded.index.fingerprints == expected


def test_a_bound_block_teaches_drop_block_and_other_errors_teach_nothing() -> None:
    encoded, plan, _ = _encoded("claude-fable-5-1")
    bound = ("messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound "
             "to a different conversation. Remove the block, or set `thinking.block_binding."
             "prefix_mismatch_behavior` to \"drop_block\". The `system` prompt differs from the "
             "one this block was created with.")
    lesson = CODEC.classify(400, _rejection(bound), encoded, plan)
    assert lesson is not None and lesson.wording == "thinking-bound-elsewhere"
    assert lesson.settings == {"anthropic": {"prefix_mismatch_behavior": "drop_block"}}
    effort = (ERRORS / "anthropic-400-unsupported-effort-level.i0.response.json").read_text()
    assert CODEC.classify(400, effort, encoded, plan) is None
    assert CODEC.classify(500, _rejection(bound), encoded, plan) is None
    missing = ("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
               "`tool_use`. When `thinking` is enabled, a final `assistant` message must start "
               "with a thinking block")
    assert CODEC.classify(400, _rejection(missing), encoded, plan) is None


def test_the_request_log_summary_counts_blocks() -> None:
    encoded, _, _ = _encoded()
    summary = CODEC.summary(encoded)
    assert summary["blocks"]["thinking"] == 3 and summary["blocks"]["redacted_thinking"] == 1


# --- per-turn prefix digests (block binding) -----------------------------------------------------


def test_a_turn_stamped_under_another_prefix_is_stale_on_a_binding_model() -> None:
    model = "claude-fable-5-1"
    before = [msgs.system("Today is 2026-09-01."), msgs.user("17*23?")]
    encoded = CODEC.encode_request(before, plan_for(model), RequestSpec(model=model))
    answer = CODEC.stamp(decode_response({"content": [
        {"type": "thinking", "thinking": "", "signature": "CAQS-sig"},
        {"type": "text", "text": "391"}], "stop_reason": "end_turn"}, origin(model)), encoded)
    assert answer.message.native["anthropic"]["prefix"] == encoded.index.prefix
    later = [*before, answer.message, msgs.user("times two?")]
    same = CODEC.encode_request(later, plan_for(model), RequestSpec(model=model))
    assert _signatures(same.body) == ["CAQS-sig"] and same.index.stale == 0
    edited = [msgs.system("Today is 2026-09-02."), *later[1:]]
    changed = CODEC.encode_request(edited, plan_for(model), RequestSpec(model=model))
    assert _signatures(changed.body) == [] and changed.index.stale == 1
    assert CODEC.summary(changed)["stale_turns"] == 1
    tools = CODEC.encode_request(later, plan_for(model), RequestSpec(model=model, tools=(
        ToolSpec(name="new_tool"),)))
    assert _signatures(tools.body) == []  # an added tool changed the prefix too
    drop = plan_for(model, settings={"prefix_mismatch_behavior": "drop_block"})
    let_api_drop = CODEC.encode_request(edited, drop, RequestSpec(model=model))
    assert _signatures(let_api_drop.body) == ["CAQS-sig"]  # the API drops and reports it
    older = CODEC.encode_request(edited, plan_for("claude-opus-4-5"),
                                 RequestSpec(model="claude-opus-4-5"))
    assert older.index.prefix == "" and older.index.stale == 0  # no binding, no digest


# --- vendors -------------------------------------------------------------------------------------


def test_minimax_gets_only_its_own_signed_blocks_unchanged() -> None:
    own = origin("MiniMax-M2", "minimax-anthropic", "api.minimax.io")
    theirs = Message(role="assistant", origin=own, parts=(
        Reasoning(kind="signed", text="mm thought", signature="mm-sig", origin=own),
        Text(text="a")))
    history = [msgs.user("q"), _turn(1, "claude-opus-4-5"), msgs.user("q2"), theirs,
               msgs.user("q3")]
    plan = plan_for("MiniMax-M2", "minimax-anthropic", "https://api.minimax.io/anthropic")
    body = body_of(history, plan, "MiniMax-M2")
    assert _signatures(body) == ["mm-sig"]


def test_kimi_replays_its_blocks_as_is_and_other_thinking_unsigned() -> None:
    own = origin("kimi-for-coding", "kimi-coding", "api.kimi.com")
    mine = Message(role="assistant", origin=own, parts=(
        Reasoning(kind="signed", text="k thought", signature="k-sig", origin=own),
        ToolCall(id="c1", name="f", arguments="{}")))
    history = [msgs.user("q"), _turn(1, "claude-opus-4-5"), msgs.user("q2"), mine,
               msgs.tool_results([ToolResult(call_id="c1", content="r")])]
    plan = plan_for("kimi-for-coding", "kimi-coding", "https://api.kimi.com/coding")
    body = body_of(history, plan, "kimi-for-coding")
    thinking = [b for m in body["messages"] for b in m["content"] if b["type"] == "thinking"]
    assert thinking == [{"type": "thinking", "thinking": "thought 1"},
                        {"type": "thinking", "thinking": "k thought", "signature": "k-sig"}]


# --- invariants ----------------------------------------------------------------------------------

_KINDS = st.sampled_from(["signed", "empty", "redacted", "unsigned", "cut"])
_ROUTES = st.sampled_from([
    ("anthropic", None, "claude-opus-4-5"), ("anthropic", None, "claude-sonnet-4-5"),
    ("anthropic", None, "claude-fable-5-1"), ("deepseek-anthropic", "https://api.deepseek.com/"
                                              "anthropic", "deepseek-chat"),
    ("custom", "https://relay.example/anthropic", "claude-opus-4-5"),
    ("bedrock-anthropic", None, "us.anthropic.claude-opus-4-5-20251101-v1:0")])


def _reasoning(kind: str, n: int, who: Origin) -> Reasoning:
    if kind == "redacted":
        return Reasoning(kind="redacted", data=f"data-{n}==", origin=who)
    if kind == "unsigned":
        return Reasoning(kind="text", text=f"plain {n}", origin=who)
    if kind == "cut":
        return Reasoning(kind="signed", text=f"cut {n}", complete=False, origin=who)
    return Reasoning(kind="signed", text="" if kind == "empty" else f"t{n}", signature=f"s-{n}",
                     origin=who)


@settings(max_examples=60)
@given(turns=st.lists(st.tuples(st.lists(_KINDS, min_size=1, max_size=3), st.booleans(),
                                st.sampled_from(["claude-opus-4-5", "claude-fable-5-1",
                                                 "deepseek-chat"])),
                      min_size=1, max_size=5),
       route=_ROUTES)
def test_a_route_never_receives_what_it_does_not_read(turns: list[Any], route: Any) -> None:
    provider, base, model = route
    history: list[Message] = [msgs.system("s"), msgs.user("start")]
    for n, (kinds, call, made_by) in enumerate(turns):
        who = origin(made_by)
        parts: list[Any] = [_reasoning(k, n * 10 + i, who) for i, k in enumerate(kinds)]
        parts.append(ToolCall(id=f"c{n}", name="f", arguments='{"a": 1}') if call else
                     Text(text=f"answer {n}"))
        history.append(Message(role="assistant", parts=tuple(parts), origin=who))
        history.append(msgs.tool_results([ToolResult(call_id=f"c{n}", content="r")]) if call
                       else msgs.user(f"next {n}"))
    stored = [msgs.loads(msgs.dumps(m)) for m in history]  # through the store's form
    before = [msgs.dumps(m) for m in stored]
    plan = plan_for(model, provider, base)
    profile = plan.profile
    body = body_of(stored, plan, model)
    assert [msgs.dumps(m) for m in stored] == before  # history never mutated
    sent = [b for m in body["messages"] if m["role"] == "assistant" for b in m["content"]]
    thinking = [b for b in sent if b["type"] in ("thinking", "redacted_thinking")]
    originals = {p.signature or p.data: p for m in stored for p in m.reasoning if p.is_opaque}
    for block in thinking:
        value = block.get("signature") or block.get("data")
        if profile.replay == "strip-all":
            raise AssertionError(f"a relay received thinking: {block}")
        if value is not None:
            assert profile.replay == "signed" and claude.is_claude(model)
            part = originals[value]
            assert part.complete and claude.reads(model, part.origin.model, claude_api=True)
            expected = ({"type": "redacted_thinking", "data": part.data} if part.kind ==
                        "redacted" else {"type": "thinking", "thinking": part.text or "",
                                         "signature": part.signature})
            assert orjson.dumps(block) == orjson.dumps(expected)  # byte for byte
        else:
            assert profile.keeps_unsigned and "signature" not in block
    assert all("cut " not in (b.get("thinking") or "") or "signature" not in b for b in thinking)


@pytest.mark.parametrize("wrap", ["vertex", "bedrock", "text"])
def test_platform_envelopes_of_the_same_rejection_teach_the_same_lesson(wrap: str) -> None:
    encoded, plan, history = _encoded()
    message = "messages.1.content.0: Invalid `signature` in `thinking` block"
    inner = _rejection(message)
    body = {"vertex": orjson.dumps([{"error": {"code": 400, "message": inner,
                                               "status": "INVALID_ARGUMENT"}}]).decode(),
            "bedrock": orjson.dumps({"message": message}).decode(),
            "text": f"upstream said: {message}"}[wrap]
    lesson = CODEC.classify(400, body, encoded, plan)
    assert lesson is not None
    assert lesson.fingerprints == {part_fingerprint(history[1].parts[0])}


def test_a_stored_position_its_bytes_lack_teaches_no_fingerprint() -> None:
    # A rejection is read against the after facts stored with a turn's bytes; where the two
    # disagree (a crafted or damaged row that still matches its digest), the block named is
    # not there: nothing is learned and nothing crashes.
    from thoughtline.codecs.anthropic.sent import TurnAfter
    from thoughtline.codecs.base import Walk

    after = TurnAfter(kinds=("thinking", "text"), parts=(0, 1), reasoning=(0, 5))
    turns = [b'{"role":"assistant","content":[{"type":"thinking","thinking":"t",'
             b'"signature":"sig-1"}]}']
    walk: Walk[Any, Any] = Walk(state=None, turns=turns, fragments=[], facts=[],
                                afters=[after], contexts=[""], history=[])
    assert Index(walk=walk).fingerprints == {
        (0, 0): part_fingerprint(Reasoning(kind="thinking", text="t", signature="sig-1"))}


@pytest.mark.parametrize("data", [b'["not", "a", "message"]', b'"text"', b'{"content":"x"}'])
def test_a_stored_turn_that_is_not_a_message_teaches_no_fingerprint(data: bytes) -> None:
    # The same, where the stored bytes are no message object at all.
    from thoughtline.codecs.anthropic.sent import TurnAfter
    from thoughtline.codecs.base import Walk

    after = TurnAfter(kinds=("thinking",), parts=(0,), reasoning=(0,))
    walk: Walk[Any, Any] = Walk(state=None, turns=[data], fragments=[], facts=[],
                                afters=[after], contexts=[""], history=[])
    assert Index(walk=walk).fingerprints == {}
