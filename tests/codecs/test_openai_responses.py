"""The OpenAI Responses codec on real recorded traffic (tests/fixtures/openai-responses, sources in
tests/fixtures/SOURCES.md) and on the documented facts
(developers.openai.com/api/docs/guides/reasoning).

Expectations come from the recordings: what the provider returned, what a client replayed next and
the provider accepted (200), and the real 400 bodies. Opaque values are compared as bytes
(``orjson.dumps`` of both sides), never with dict ``==``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import RequestSpec
from thoughtline.codecs.openai_responses import (
    NS,
    WORDINGS,
    StreamFold,
    classify,
    decode_response,
    encode_request,
    item_fingerprint,
    model_family,
    resolve_responses,
)
from thoughtline.config import ProviderConfig, presets
from thoughtline.events import ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from thoughtline.messages import (
    Message,
    Opaque,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    dumps,
    loads,
    system,
    tool_results,
    user,
)
from thoughtline.verdicts import Verdict

DIR = Path(__file__).resolve().parents[1] / "fixtures" / "openai-responses"
ERRORS = Path(__file__).resolve().parents[1] / "fixtures" / "errors"
OPENAI = Origin(api="openai-responses", provider="openai-responses", host="api.openai.com",
                model="gpt-5")
OUR_KEYS = frozenset({"native", "origin", "complete", "kind", "t", "parts", "incomplete",
                      "shell", "item", "part", "response"})

WHOLE = [*sorted(p.name for p in DIR.glob("*.response.json")),
         "vercel-openai-reasoning-encrypted-content.1.json"]
STREAMS = sorted(p.name for p in [*DIR.glob("*.sse.txt"), *DIR.glob("*.chunks.txt")])


# --- reading the recordings ---------------------------------------------------------------------


def load(name: str, folder: Path = DIR) -> Any:
    return orjson.loads((folder / name).read_bytes())


def sse(text: str) -> Iterator[tuple[str, Any]]:
    """(``event:`` name or "", parsed ``data``) per SSE event; comments skipped."""
    event, data = "", []
    for line in [*text.splitlines(), ""]:
        if not line:
            if data and "\n".join(data).strip() != "[DONE]":
                yield event, orjson.loads("\n".join(data))
            event, data = "", []
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)


def streams(name: str) -> list[list[tuple[str, Any]]]:
    """Each recorded response of a stream file as (event type, payload) pairs (vercel's
    ``.chunks.txt`` holds several responses back to back, without ``event:`` lines)."""
    text = (DIR / name).read_text("utf-8")
    if name.endswith(".chunks.txt"):
        events = [("", orjson.loads(line)) for line in text.splitlines() if line.strip()]
    else:
        events = list(sse(text))
    out: list[list[tuple[str, Any]]] = []
    for event in events:
        if event[1].get("type") == "response.created" or not out:
            out.append([])
        out[-1].append(event)
    return out


def final_response(events: list[tuple[str, Any]]) -> dict[str, Any]:
    return next(p["response"] for _, p in reversed(events)
                if p.get("type") in ("response.completed", "response.incomplete"))


def done_items(events: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """The ``output_item.done`` items in output order (OpenRouter sends them out of order)."""
    done = [p for _, p in events if p.get("type") == "response.output_item.done"]
    return [p["item"] for p in sorted(done, key=lambda p: p["output_index"])]


def fold(events: list[tuple[str, Any]], origin: Origin = OPENAI) -> tuple[Any, list[Any]]:
    state = StreamFold(origin)
    deltas = [d for event_type, payload in events for d in state.add_event(event_type, payload)]
    return state.finish(), deltas


def synthetic_stream(response: dict[str, Any]) -> list[tuple[str, Any]]:
    """A whole response played as the event sequence the recordings show (SYNTHETIC: built from a
    recorded whole response, in the order of the recorded streams: added, deltas, done)."""
    events: list[tuple[str, Any]] = [("response.created", {
        "type": "response.created", "response": {**response, "output": [],
                                                 "status": "in_progress"}})]
    for index, item in enumerate(response["output"]):
        kind = item["type"]
        empty = dict(item)
        if kind == "message":
            empty["content"] = []
        elif kind == "function_call":
            empty["arguments"] = ""
        elif kind == "reasoning":
            empty["summary"] = []
        events.append(("response.output_item.added", {
            "type": "response.output_item.added", "output_index": index, "item": empty}))
        if kind == "message":
            for ci, part in enumerate(item["content"]):
                text = part.get("text", "")
                for piece in (text[: len(text) // 2], text[len(text) // 2:]):
                    events.append(("response.output_text.delta", {
                        "type": "response.output_text.delta", "output_index": index,
                        "content_index": ci, "item_id": item.get("id"), "delta": piece}))
        elif kind == "function_call":
            events.append(("response.function_call_arguments.delta", {
                "type": "response.function_call_arguments.delta", "output_index": index,
                "delta": item["arguments"]}))
        elif kind == "reasoning":
            for si, part in enumerate(item.get("summary") or ()):
                events.append(("response.reasoning_summary_text.delta", {
                    "type": "response.reasoning_summary_text.delta", "output_index": index,
                    "summary_index": si, "delta": part["text"]}))
        events.append(("response.output_item.done", {
            "type": "response.output_item.done", "output_index": index, "item": item}))
    events.append(("response.completed", {"type": "response.completed", "response": response}))
    return events


def walk_keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from walk_keys(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from walk_keys(inner)


def on(provider: str = "openai-responses", base_url: str = "https://api.openai.com/v1",
       model: str = "gpt-5", **kwargs: Any) -> replay.ReplayPlan:
    return replay.plan(resolve_responses(provider, base_url, model), **kwargs)


def body_for(history: list[Message], plan: replay.ReplayPlan, **kwargs: Any) -> dict[str, Any]:
    return orjson.loads(orjson.dumps(encode_request(history, plan, model=plan.target.model,
                                                    **kwargs)))


def reasoning_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in body["input"] if i.get("type") == "reasoning"]


def sorted_bytes(value: Any) -> bytes:
    # The pydantic-ai recordings were re-serialised with sorted keys (SOURCES.md): compare the
    # values byte for byte in that key order.
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


# --- decode: whole responses --------------------------------------------------------------------


@pytest.mark.parametrize("name", WHOLE)
def test_whole_response_keeps_every_item_verbatim_in_order(name: str) -> None:
    response = load(name)
    message = decode_response(response, OPENAI).message
    raw = orjson.dumps(response["output"])
    kinds = []
    for part in message.parts:
        if isinstance(part, Reasoning):
            item = part.native[NS]
            assert orjson.dumps(item) in raw  # the item exactly as received
            if item.get("encrypted_content"):
                assert part.kind == "encrypted"
                assert orjson.dumps(part.data) == orjson.dumps(item["encrypted_content"])
            kinds.append("reasoning")
        elif isinstance(part, ToolCall):
            kinds.append("function_call")
        elif isinstance(part, Text) and "item" in part.native.get(NS, {}):
            kinds.append("message")
    assert kinds == [i["type"] for i in response["output"]]


def test_reasoning_item_maps_to_the_shared_shape() -> None:
    response = load("pydantic-ai-openai-responses-reasoning-tool-calls.i0.response.json")
    item = response["output"][0]
    part = decode_response(response, OPENAI).message.parts[0]
    assert isinstance(part, Reasoning)
    assert part.kind == "encrypted" and part.complete and part.origin == OPENAI
    assert part.data == item["encrypted_content"]
    assert part.native[NS]["id"] == item["id"]
    assert part.summary == "\n\n".join(s["text"] for s in item["summary"])


def test_phase_is_kept_on_the_message_text() -> None:
    message = decode_response(load("pydantic-ai-openai-responses-gpt55-phase.i0.response.json"),
                              OPENAI).message
    text = next(p for p in message.parts if isinstance(p, Text))
    assert text.text == "I'll check the capital lookup tool for \"PotatoLand.\""
    assert text.native[NS]["item"]["phase"] == "commentary"


def test_deepseek_readable_reasoning_is_text_and_encrypted_reference_is_data() -> None:
    response = load("pydantic-ai-deepseek-responses-replay-reasoning.i0.response.json")
    part = decode_response(response, OPENAI).message.parts[0]
    assert part.text == response["output"][0]["content"][0]["text"]
    assert part.data == response["output"][0]["encrypted_content"]


def test_unknown_items_are_opaque_and_replayed_in_place() -> None:
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed",
              "action": {"type": "search", "query": "q"}}
    response = {"id": "resp_1", "status": "completed",
                "output": [search, load("pydantic-ai-openai-responses-gpt55-phase.i1.response.json")
                           ["output"][0]]}
    message = decode_response(response, OPENAI).message
    assert isinstance(message.parts[0], Opaque)
    body = body_for([user("hi"), message], on())
    assert orjson.dumps(body["input"][1]) == orjson.dumps(search)


# --- fold: streams ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STREAMS)
def test_stream_folds_to_the_final_response_with_the_done_items(name: str) -> None:
    """Every recorded stream folds to the message its final response describes — except that an
    item's final form is its ``output_item.done`` (the reasoning guide): OpenAI re-encrypts a
    reasoning item in ``response.completed`` and OpenRouter renames its id there."""
    for events in streams(name):
        folded, deltas = fold(events)
        final = final_response(events)
        whole = decode_response({**final, "output": done_items(events)}, OPENAI)
        assert dumps(folded.message) == dumps(whole.message)
        assert folded.usage == whole.usage and folded.finish == whole.finish
        assert not folded.message.incomplete
        reasoning = [p for p in folded.message.parts if isinstance(p, Reasoning)]
        for part, item in zip(reasoning, [i for i in done_items(events)
                                          if i["type"] == "reasoning"], strict=True):
            assert orjson.dumps(part.native[NS]) == orjson.dumps(item)
        # and everything but those re-issued values is what the final response says
        plain = decode_response(final, OPENAI).message
        assert [type(p) for p in plain.parts] == [type(p) for p in folded.message.parts]
        assert plain.text == folded.message.text
        assert plain.tool_calls == folded.message.tool_calls
        shown = "".join(d.text for d in deltas if isinstance(d, TextDelta))
        assert shown == folded.message.text


def test_the_encrypted_item_comes_from_output_item_done_not_added() -> None:
    events = streams("pydantic-ai-openai-responses-gpt55-phase-stream.i0.response.sse.txt")[0]
    added = next(p["item"] for _, p in events if p["type"] == "response.output_item.added")
    done = done_items(events)[0]
    assert added["encrypted_content"] != done["encrypted_content"]
    part = fold(events)[0].message.parts[0]
    assert orjson.dumps(part.data) == orjson.dumps(done["encrypted_content"])


def test_event_type_comes_from_the_sse_line_or_the_payload() -> None:
    events = streams("pydantic-ai-openai-responses-gpt55-phase-stream.i0.response.sse.txt")[0]
    assert all(t == p["type"] for t, p in events)  # the recording names events
    named = fold(events)[0]
    unnamed = fold([("", p) for _, p in events])[0]
    assert dumps(named.message) == dumps(unnamed.message)


@pytest.mark.parametrize("name", WHOLE)
def test_whole_response_streamed_folds_to_the_same_message(name: str) -> None:
    response = load(name)
    folded, deltas = fold(synthetic_stream(response))
    whole = decode_response(response, OPENAI)
    assert dumps(folded.message) == dumps(whole.message)
    assert folded.finish == whole.finish
    started = [d for d in deltas if isinstance(d, ToolCallStarted)]
    assert [s.id for s in started] == [c.id for c in whole.message.tool_calls]
    args = "".join(d.text for d in deltas if isinstance(d, ToolCallDelta))
    assert args == "".join(c.arguments for c in whole.message.tool_calls)


def test_reasoning_deltas_are_shown_from_summaries_and_raw_text() -> None:
    events = streams("pydantic-ai-openrouter-responses-raw-cot-stream.i0.response.sse.txt")[0]
    folded, deltas = fold(events)
    shown = "".join(d.text for d in deltas if isinstance(d, ReasoningDelta))
    assert shown and shown == folded.message.parts[0].text
    summary = streams("vercel-openai-reasoning-encrypted-content.1.chunks.txt")[0]
    shown = "".join(d.text for d in fold(summary)[1] if isinstance(d, ReasoningDelta))
    assert shown == fold(summary)[0].message.parts[0].summary


def test_a_cut_stream_is_incomplete_and_its_reasoning_is_never_replayed() -> None:
    events = streams("pydantic-ai-openai-responses-gpt55-phase-stream.i0.response.sse.txt")[0]
    cut = [e for e in events if e[1]["type"] != "response.completed"][:8]
    state = StreamFold(OPENAI)
    for event_type, payload in cut:
        state.add_event(event_type, payload)
    assert not state.finished
    done = state.finish(complete=False)
    assert done.message.incomplete
    assert all(not p.complete for p in done.message.reasoning)
    body = body_for([user("q"), done.message, user("again")], on(model="gpt-5.5"))
    assert reasoning_items(body) == []
    assert not any(i.get("type") == "function_call" for i in body["input"])


# --- replay: the recorded next requests ---------------------------------------------------------

# (response, next request the provider accepted, model, provider, base URL)
REPLAYS = [
    ("pydantic-ai-openai-responses-reasoning-tool-calls.i0.response.json",
     "pydantic-ai-openai-responses-reasoning-tool-calls.i1.request.json", "gpt-5",
     "openai-responses", "https://api.openai.com/v1"),
    ("pydantic-ai-openai-responses-gpt55-phase.i0.response.json",
     "pydantic-ai-openai-responses-gpt55-phase.i1.request.json", "gpt-5.5",
     "openai-responses", "https://api.openai.com/v1"),
    ("pydantic-ai-openai-responses-gpt55-phase-stream.i0.response.sse.txt",
     "pydantic-ai-openai-responses-gpt55-phase-stream.i1.request.json", "gpt-5.5",
     "openai-responses", "https://api.openai.com/v1"),
    ("pydantic-ai-bedrock-mantle-gpt56-luna-rsn-reasoning-stream.i1.response.sse.txt",
     "pydantic-ai-bedrock-mantle-gpt56-luna-rsn-reasoning-stream.i2.request.json",
     "openai.gpt-5.6-luna", "custom", "https://bedrock-mantle.us-east-1.api.aws/openai/v1"),
    ("pydantic-ai-bedrock-mantle-gpt56-luna-rsn-reasoning.i2.response.json",
     "pydantic-ai-bedrock-mantle-gpt56-luna-rsn-reasoning.i3.request.json",
     "openai.gpt-5.6-luna", "custom", "https://bedrock-mantle.us-east-1.api.aws/openai/v1"),
]


def _replayed(response_name: str, request_name: str, model: str, provider: str,
              base_url: str) -> tuple[dict[str, Any], dict[str, Any], Message]:
    """Our next request for the recorded history: the decoded turn in place of the items it
    returned; earlier assistant items of the recording decoded from the recording itself."""
    route = resolve_responses(provider, base_url, model)
    origin = replay.target_of(route)
    if response_name.endswith(".json"):
        turn = decode_response(load(response_name), origin).message
    else:
        turn = fold(streams(response_name)[-1], origin)[0].message
    ours = {p.native.get(NS, {}).get("id") for p in turn.parts if isinstance(p, Reasoning)}
    request = load(request_name)
    history: list[Message] = []
    group: list[dict[str, Any]] = []
    results: list[ToolResult] = []

    def flush() -> None:
        if group:
            mine = any(item.get("id") in ours for item in group)
            history.append(turn if mine else decode_response({"output": list(group)},
                                                             origin).message)
            group.clear()
        if results:
            history.append(tool_results(list(results)))
            results.clear()

    for item in request["input"]:
        if item.get("type") == "function_call_output":
            if group:
                flush()
            results.append(ToolResult(call_id=item["call_id"], content=item["output"]))
        elif item.get("role") == "user":
            flush()
            history.append(user(item["content"]))
        else:
            if results:
                flush()
            group.append(item)
    flush()
    assert turn in history
    return body_for(history, replay.plan(route)), request, turn


@pytest.mark.parametrize(("response", "request_name", "model", "provider", "base_url"), REPLAYS)
def test_replayed_reasoning_items_are_byte_identical_and_in_place(
        response: str, request_name: str, model: str, provider: str, base_url: str) -> None:
    ours, recorded, _turn = _replayed(response, request_name, model, provider, base_url)
    mine, theirs = reasoning_items(ours), reasoning_items(recorded)
    assert len(mine) == len(theirs) >= 1
    for a, b in zip(mine, theirs, strict=True):
        assert orjson.dumps(a["encrypted_content"]) == orjson.dumps(b["encrypted_content"])
        assert orjson.dumps(a["id"]) == orjson.dumps(b["id"])
        if response.endswith(".json") or "mantle" in response:
            assert sorted_bytes(a) == sorted_bytes(b)  # the whole item, verbatim
        else:
            # pydantic-ai rebuilt this one from its parts and left off the empty ``content``
            # list the done item carries; every value it did send is ours byte for byte
            assert sorted_bytes({k: v for k, v in a.items() if k in b}) == sorted_bytes(b)
    # in its original position: right before the item it led to, as in the accepted request
    for items in (ours["input"], recorded["input"]):
        positions = [i for i, item in enumerate(items) if item.get("type") == "reasoning"]
        followers = [items[i + 1].get("type", "message") for i in positions]
        assert all(f in ("function_call", "message") for f in followers)
    def follower_keys(items: list[dict[str, Any]]) -> list[Any]:
        # (the Mantle recording rewrote reused call ids, so followers are matched by item id)
        return [items[i + 1].get("id") for i, it in enumerate(items)
                if it.get("type") == "reasoning"]
    assert follower_keys(ours["input"]) == follower_keys(recorded["input"])


@pytest.mark.parametrize(("response", "request_name", "model", "provider", "base_url"),
                         [r for r in REPLAYS if "phase" in r[0] or "mantle" in r[0]])
def test_phase_is_resent_on_every_assistant_message(
        response: str, request_name: str, model: str, provider: str, base_url: str) -> None:
    ours, recorded, _ = _replayed(response, request_name, model, provider, base_url)
    mine = [i for i in ours["input"] if i.get("type") == "message"]
    theirs = [i for i in recorded["input"] if i.get("type") == "message"]
    def shell(item: dict[str, Any]) -> bytes:
        # pydantic-ai's recorder turns smart quotes into ASCII in free text (SOURCES.md), so
        # the text itself is compared apart; everything else byte for byte
        return sorted_bytes({**item, "content": [{**c, "text": ""} for c in item["content"]]})

    assert [shell(i) for i in mine] == [shell(i) for i in theirs]
    for a, b in zip(mine, theirs, strict=True):
        texts = [c["text"] for c in a["content"]]
        assert [t.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
                for t in texts] == [c["text"] for c in b["content"]]
    assert all("phase" in i for i in mine)


def test_replay_survives_a_store_round_trip_byte_for_byte() -> None:
    turn = decode_response(load("pydantic-ai-openai-responses-gpt55-phase.i0.response.json"),
                           OPENAI).message
    history = [user("q"), turn, tool_results([ToolResult(call_id=turn.tool_calls[0].id,
                                                          content="Potato City")])]
    restored = [loads(dumps(m)) for m in history]
    plan = on()
    assert orjson.dumps(encode_request(history, plan, model="gpt-5")) == orjson.dumps(
        encode_request(restored, plan, model="gpt-5"))


def test_a_request_never_mutates_history_and_carries_none_of_our_keys() -> None:
    turn = decode_response(load("pydantic-ai-openai-responses-gpt55-phase.i0.response.json"),
                           OPENAI).message
    history = [system("be brief"), user("q"), turn,
               tool_results([ToolResult(call_id=turn.tool_calls[0].id, content="x")])]
    before = [dumps(m) for m in history]
    body = body_for(history, on(), params={"reasoning_effort": "high"}, stream=True)
    assert [dumps(m) for m in history] == before
    assert not (set(walk_keys(body)) & OUR_KEYS)
    assert body["input"][0] == {"role": "system", "content": "be brief"}


# --- request fields per route -------------------------------------------------------------------


def test_openai_is_stateless_and_asks_for_encrypted_reasoning() -> None:
    body = body_for([user("hi")], on(model="gpt-5.5"), params={"reasoning_effort": "high"})
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high"}


def test_reasoning_context_is_sent_only_where_the_model_has_it() -> None:
    assert body_for([user("hi")], on(model="gpt-5.6"))["reasoning"] == {"context": "all_turns"}
    assert "reasoning" not in body_for([user("hi")], on(model="gpt-5.5"))
    overridden = body_for([user("hi")], on(model="gpt-5.6"),
                          params={"reasoning_context": "current_turn"})
    assert overridden["reasoning"]["context"] == "current_turn"
    learned = on(model="gpt-5.6", verdicts=[Verdict(provider="openai-responses",
                                                   host="api.openai.com", model="gpt-5.6",
                                                   drop=frozenset({"reasoning.context"}))])
    assert "reasoning" not in body_for([user("hi")], learned)


def test_deepseek_gets_no_store_switch_and_its_readable_items() -> None:
    plan = on("deepseek-responses", "https://api.deepseek.com", "deepseek-v4-flash")
    response = load("pydantic-ai-deepseek-responses-replay-reasoning.i0.response.json")
    turn = decode_response(response, plan.target).message
    body = body_for([user("q"), turn, user("again")], plan, params={"reasoning_effort": "none"})
    assert "store" not in body and "include" not in body
    assert body["reasoning"] == {"effort": "none"}
    # only what DeepSeek reads: its encrypted_content ("<response id>-0") references nothing
    issued = response["output"][0]
    kept = {k: issued[k] for k in ("type", "id", "summary", "content")}
    assert sorted_bytes(reasoning_items(body)[0]) == sorted_bytes(kept)


def test_a_readable_item_without_encrypted_content_is_not_sent_to_openai() -> None:
    item = {"id": "rs_plain", "type": "reasoning", "summary": [
        {"type": "summary_text", "text": "thinking"}]}
    turn = decode_response({"output": [item, {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text",
                                                           "text": "ok"}]}]}, OPENAI).message
    # with store=false an id alone is a reference to nothing: "Item with id 'rs_…' not found"
    assert reasoning_items(body_for([user("q"), turn], on())) == []


def test_xai_drops_phase_it_does_not_read() -> None:
    plan = on("xai-responses", "https://api.x.ai/v1", "grok-4")
    turn = decode_response(load("pydantic-ai-openai-responses-gpt55-phase.i0.response.json"),
                           plan.target).message
    messages = [i for i in body_for([user("q"), turn], plan)["input"] if i.get("type") ==
                "message"]
    assert messages and all("phase" not in m for m in messages)


def test_tools_use_the_flat_responses_shape() -> None:
    from thoughtline.messages import ToolSpec

    body = body_for([user("q")], on(), tools=[ToolSpec(name="f", description="d")])
    assert body["tools"] == [{"type": "function", "name": "f", "description": "d",
                              "parameters": {"type": "object", "properties": {}}}]


# --- scope ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("origin", "sent"), [
    (OPENAI, True),
    (dataclasses.replace(OPENAI, model="gpt-5-2025-08-07"), True),  # a dated snapshot: family
    (dataclasses.replace(OPENAI, model="gpt-5-mini"), False),
    (dataclasses.replace(OPENAI, host="relay.example.com"), False),
    (dataclasses.replace(OPENAI, api="openai-chat"), False),
    (dataclasses.replace(OPENAI, account="org-other"), False),
])
def test_encrypted_items_go_only_to_their_issuer(origin: Origin, sent: bool) -> None:
    response = load("pydantic-ai-openai-responses-reasoning-tool-calls.i0.response.json")
    turn = decode_response(response, origin).message
    plan = on(account="org-mine")
    body = body_for([user("q"), turn, tool_results([ToolResult(call_id=turn.tool_calls[0].id,
                                                               content="ok")])], plan)
    assert bool(reasoning_items(body)) is sent
    assert [i.get("type") for i in body["input"]].count("function_call") == 1
    if not sent:  # a foreign call keeps its place but not its issuer's item id
        call = next(i for i in body["input"] if i.get("type") == "function_call")
        assert "id" not in call


def test_model_family_strips_only_a_dated_snapshot() -> None:
    assert model_family("gpt-5.5-2026-04-23") == model_family("GPT-5.5") == "gpt-5.5"
    assert model_family("gpt-5.6-luna") != model_family("gpt-5.6")


# --- repair: classify ---------------------------------------------------------------------------


def _two_turns() -> tuple[list[Message], dict[str, Any], list[str]]:
    first = decode_response(load("pydantic-ai-openai-responses-reasoning-tool-calls.i0.response"
                                 ".json"), OPENAI).message
    second = decode_response(load("pydantic-ai-openai-responses-gpt55-phase.i0.response.json"),
                             OPENAI).message
    history = [user("one"), first, tool_results([ToolResult(call_id=first.tool_calls[0].id,
                                                             content="a")]),
               user("two"), second, tool_results([ToolResult(call_id=second.tool_calls[0].id,
                                                              content="b")])]
    body = body_for(history, on())
    items = reasoning_items(body)
    return history, body, [i["id"] for i in items]


def _error(message: str, code: str | None = "invalid_encrypted_content") -> str:
    return orjson.dumps({"error": {"message": message, "type": "invalid_request_error",
                                   "param": None, "code": code}}).decode()


def test_every_wording_is_recognised() -> None:
    _history, body, ids = _two_turns()
    texts = {
        "signature-invalid": "Encrypted content could not be decrypted or parsed.",
        "undecryptable": f"The encrypted content for item {ids[1]} could not be verified. "
                         "Reason: Encrypted content could not be decrypted or parsed.",
        "unverified": f"The encrypted content for item {ids[1]} could not be verified.",
        "xai-undecryptable": "Could not decrypt the provided encrypted_content. Ensure the value "
                             "is the unmodified encrypted_content from a previous response.",
        "relay-foreign": f"Item {ids[1]}: encrypted content was not issued to this caller",
        "orphan": f"Item '{ids[1]}' of type 'reasoning' was provided without its required "
                  "following item.",
        "not-persisted": f"Item with id '{ids[1]}' not found. Items are not persisted when "
                         "`store` is set to false. Try again with `store` set to true, or remove "
                         "this item from your input.",
    }
    assert set(texts) == {w.id for w in WORDINGS}
    for wording, text in texts.items():
        code = "thinking_signature_invalid" if wording == "signature-invalid" else None
        lesson = classify(400, _error(text, code) if code else _error(text), body)
        assert lesson is not None and lesson.wording == wording, wording
        assert lesson.fingerprints and len(lesson.fingerprints) <= len(ids)


def test_a_named_item_is_the_only_one_fingerprinted() -> None:
    _, body, ids = _two_turns()
    items = reasoning_items(body)
    lesson = classify(400, _error(f"The encrypted content for item {ids[0]} could not be "
                                  "verified."), body)
    assert lesson.fingerprints == {item_fingerprint(items[0])}
    prefix = items[1]["encrypted_content"][:24]
    lesson = classify(400, _error(f"The encrypted content {prefix}… could not be verified."), body)
    assert lesson.fingerprints == {item_fingerprint(items[1])}


def test_the_recorded_orphan_error_names_exactly_its_item() -> None:
    request = load("openai-responses-400-reasoning-item-without-following-item.i1.request.json",
                   ERRORS)
    response = (ERRORS / "openai-responses-400-reasoning-item-without-following-item.i1"
                ".response.json").read_text("utf-8")
    lesson = classify(400, response, request)
    assert lesson is not None and lesson.wording == "orphan"
    assert lesson.fingerprints == {item_fingerprint(reasoning_items(request)[0])}


def test_an_unnamed_rejection_drops_the_stale_items_never_all() -> None:
    history, body, _ = _two_turns()
    items = reasoning_items(body)
    lesson = classify(400, _error("Could not decrypt the provided encrypted_content. Ensure the "
                                  "value is the unmodified encrypted_content from a previous "
                                  "response.", code=None), body)
    # the first turn's item is before the current tool loop: it goes, the loop's item stays
    assert lesson.fingerprints == {item_fingerprint(items[0])}
    retry = replay.plan(resolve_responses("openai-responses", "https://api.openai.com/v1",
                                          "gpt-5"), fingerprints=lesson.fingerprints)
    assert [i["id"] for i in reasoning_items(body_for(history, retry))] == [items[1]["id"]]


def test_a_not_found_message_id_loses_only_its_id() -> None:
    history, body, _ = _two_turns()
    message_id = next(i["id"] for i in body["input"] if i.get("type") == "message")
    lesson = classify(400, _error(f"Item with id '{message_id}' not found. Items are not "
                                  "persisted when `store` is set to false.", code=None), body)
    retry = replay.plan(resolve_responses("openai-responses", "https://api.openai.com/v1",
                                          "gpt-5"), fingerprints=lesson.fingerprints)
    again = body_for(history, retry)
    message = next(i for i in again["input"] if i.get("type") == "message")
    assert "id" not in message and message["phase"] == "commentary"
    assert len(reasoning_items(again)) == len(reasoning_items(body))


def test_other_errors_teach_nothing() -> None:
    request = load("deepseek-responses-400-no-tool-output.i0.request.json", ERRORS)
    body = (ERRORS / "deepseek-responses-400-no-tool-output.i0.response.json").read_text("utf-8")
    assert classify(400, body, request) is None
    _, sent, ids = _two_turns()
    assert classify(500, _error(f"item {ids[0]} could not be verified"), sent) is None


# --- the codec object ---------------------------------------------------------------------------


def test_the_registry_hands_out_the_codec_and_its_endpoint() -> None:
    codec = registry.codec("openai-responses")
    provider = ProviderConfig(id="openai-responses", api="openai-responses",
                              base_url="https://api.openai.com/v1/")
    endpoint = codec.endpoint(provider, "gpt-5", stream=True)
    assert endpoint.url == "https://api.openai.com/v1/responses" and endpoint.framing == "sse"
    assert codec.auth_scheme(provider) == "bearer"
    route = codec.resolve("openai-responses", "https://api.openai.com/v1", "gpt-5")
    encoded = codec.encode_request([user("hi")], replay.plan(route),
                                   RequestSpec(model="gpt-5", stream=True))
    assert encoded.body["stream"] is True and encoded.body["store"] is False
    assert codec.summary(encoded)["body_extras"] == ["include", "store"]
    assert route.to_json()["api"] == "openai-responses"


@pytest.mark.parametrize(("preset", "row", "url"), [
    ("openai-responses", "openai", "https://api.openai.com/v1/responses"),
    ("xai-responses", "xai", "https://api.x.ai/v1/responses"),
    ("deepseek-responses", "deepseek", "https://api.deepseek.com/responses"),
    ("openrouter-responses", "openrouter", "https://openrouter.ai/api/v1/responses"),
])
def test_presets_resolve_to_their_rows(preset: str, row: str, url: str) -> None:
    provider = presets()[preset]
    assert provider.api == "openai-responses"
    codec = registry.codec(provider.api)
    assert codec.resolve(provider.route_id, provider.base_url, provider.model).row == row
    assert codec.endpoint(provider, provider.model, stream=False).url == url


# --- properties ---------------------------------------------------------------------------------

_TURNS = [name for name in WHOLE if "fantasy" not in name]
_ORIGINS = [OPENAI, dataclasses.replace(OPENAI, model="gpt-5-mini"),
            dataclasses.replace(OPENAI, host="relay.example.com")]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Message], frozenset[str]]:
    history: list[Message] = []
    fingerprints: set[str] = set()
    for name in draw(st.lists(st.sampled_from(_TURNS), min_size=1, max_size=5)):
        history.append(user(draw(st.text(max_size=8))))
        turn = decode_response(load(name), draw(st.sampled_from(_ORIGINS))).message
        if draw(st.booleans()) and draw(st.booleans()):
            turn = dataclasses.replace(turn, incomplete=True)
        history.append(turn)
        for part in turn.reasoning:
            if draw(st.integers(0, 3)) == 0:
                fingerprints.add(item_fingerprint(part.native[NS]))
        if turn.tool_calls and not turn.incomplete:
            history.append(tool_results([ToolResult(call_id=c.id, content="r")
                                         for c in turn.tool_calls]))
    return history, frozenset(fingerprints)


@given(histories())
def test_any_history_replays_exactly_the_eligible_items_verbatim(
        drawn: tuple[list[Message], frozenset[str]]) -> None:
    history, fingerprints = drawn
    before = [dumps(m) for m in history]
    plan = on(fingerprints=fingerprints)
    raw = orjson.dumps(encode_request(history, plan, model="gpt-5"))
    body = orjson.loads(raw)
    assert [dumps(m) for m in history] == before  # never mutated
    assert not (set(walk_keys(body)) & OUR_KEYS)
    eligible = [orjson.dumps(p.native[NS]) for m in history if m.role == "assistant"
                and not m.incomplete for p in m.reasoning
                if p.complete and plan.may_replay(p.origin) and p.data
                and item_fingerprint(p.native[NS]) not in fingerprints]
    assert [orjson.dumps(i) for i in reasoning_items(body)] == eligible
    assert all(item in raw for item in eligible)  # byte for byte inside the serialized body
    restored = [loads(dumps(m)) for m in history]
    assert orjson.dumps(encode_request(restored, plan, model="gpt-5")) == raw


def test_a_turn_that_stopped_after_its_reasoning_does_not_send_an_orphan() -> None:
    item = load("pydantic-ai-openai-responses-gpt55-phase.i0.response.json")["output"][0]
    cut = decode_response({"id": "resp_x", "status": "incomplete",
                           "incomplete_details": {"reason": "max_output_tokens"},
                           "output": [item]}, OPENAI)
    assert cut.finish == "length" and cut.message.parts[0].complete
    body = body_for([user("q"), cut.message, user("go on")], on())
    assert reasoning_items(body) == []


def test_an_unnamed_rejection_suspects_the_item_another_snapshot_made() -> None:
    codec = registry.codec("openai-responses")
    snapshot = dataclasses.replace(OPENAI, model="gpt-5-2025-08-07")  # the scope lets it through
    first = decode_response(load("pydantic-ai-openai-responses-reasoning-tool-calls.i0.response"
                                 ".json"), OPENAI).message
    second = decode_response(load("pydantic-ai-openai-responses-gpt55-phase.i0.response.json"),
                             snapshot).message
    history = [user("one"), first,
               tool_results([ToolResult(call_id=first.tool_calls[0].id, content="a")]),
               second, tool_results([ToolResult(call_id=second.tool_calls[0].id, content="b")])]
    plan = on()
    encoded = codec.encode_request(history, plan, RequestSpec(model="gpt-5"))
    items = reasoning_items(dict(encoded.body))
    assert len(items) == 2  # both in the current tool loop
    body = _error("Could not decrypt the provided encrypted_content. Ensure the value is the "
                  "unmodified encrypted_content from a previous response.", code=None)
    lesson = codec.classify(400, body, encoded, plan)
    assert lesson.fingerprints == {item_fingerprint(items[1])}  # the other snapshot's item
    # without origins the guess falls back to all but the newest
    assert classify(400, body, encoded.body).fingerprints == {item_fingerprint(items[0])}


@pytest.mark.parametrize(("param", "switch", "field"), [
    ("include", "include", "include"), ("store", "store", "store"),
    ("reasoning.context", "reasoning.context", "reasoning"),
])
def test_an_unknown_switch_teaches_a_verdict_that_drops_it(param: str, switch: str,
                                                          field: str) -> None:
    codec = registry.codec("openai-responses")
    plan = on(model="gpt-5.6")
    encoded = codec.encode_request([user("hi")], plan, RequestSpec(model="gpt-5.6"))
    assert field in encoded.body
    lesson = codec.classify(400, _error(f"Unknown parameter: '{param}'.", "unknown_parameter"),
                            encoded, plan)
    assert lesson is not None and lesson.verdict.drop == {switch} and not lesson.fingerprints
    assert (lesson.verdict.provider, lesson.verdict.host, lesson.verdict.model) == (
        "openai-responses", "api.openai.com", "gpt-5.6")
    retry = codec.encode_request([user("hi")], on(model="gpt-5.6", verdicts=[lesson.verdict]),
                                 RequestSpec(model="gpt-5.6"))
    assert field not in retry.body


def test_a_refused_phase_is_learned_and_left_off() -> None:
    codec = registry.codec("openai-responses")
    turn = decode_response(load("pydantic-ai-openai-responses-gpt55-phase.i0.response.json"),
                           OPENAI).message
    history = [user("q"), turn, tool_results([ToolResult(call_id=turn.tool_calls[0].id,
                                                          content="x")])]
    plan = on()
    encoded = codec.encode_request(history, plan, RequestSpec(model="gpt-5"))
    lesson = codec.classify(400, _error("Unknown parameter: 'input[2].phase'.",
                                        "unknown_parameter"), encoded, plan)
    retry = body_for(history, on(verdicts=[lesson.verdict]))
    message = next(i for i in retry["input"] if i.get("type") == "message")
    assert "phase" not in message and message["id"].startswith("msg_")
    assert len(reasoning_items(retry)) == 1


def test_an_unknown_parameter_that_is_no_switch_teaches_nothing() -> None:
    codec = registry.codec("openai-responses")
    plan = on()
    encoded = codec.encode_request([user("hi")], plan, RequestSpec(model="gpt-5"))
    body = _error("Unknown parameter: 'response_format'.", "unknown_parameter")
    assert codec.classify(400, body, encoded, plan) is None


def test_a_failed_response_is_an_error_not_a_turn() -> None:
    from thoughtline.errors import ProtocolError

    error = {"code": "server_error", "message": "The model failed to answer."}
    with pytest.raises(ProtocolError, match="failed to answer"):
        decode_response({"id": "r", "status": "failed", "error": error, "output": []}, OPENAI)
    state = StreamFold(OPENAI)
    state.add_event("response.created", {"type": "response.created",
                                         "response": {"id": "r", "status": "in_progress"}})
    with pytest.raises(ProtocolError, match="failed to answer"):
        state.add_event("response.failed", {"type": "response.failed", "response": {
            "id": "r", "status": "failed", "error": error, "output": []}})
