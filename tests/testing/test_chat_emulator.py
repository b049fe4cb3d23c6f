"""The loopback chat emulator, driven with plain httpx (no thoughtline client code).

Each personality answers whole and streamed in its provider's shape, plays the scripted tool loop,
refuses malformed requests with the provider's exact wording (and only those), and verifies the
opaque values it issued, also across a restart.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import thoughtline.testing as testing
from thoughtline.testing import ChatEmulator, Signer
from thoughtline.testing.personalities import PERSONALITIES
from thoughtline.testing.signing import SKIP_THOUGHT_SIGNATURE

AUTH = {"authorization": "Bearer test-key"}
HTTP = httpx.Client(timeout=10.0)  # one client: building one costs more than a loopback request
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Get weather information for a location",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    },
}
SYSTEM = {"role": "system", "content": "You are a helpful assistant"}
# Model each personality is asked for; OpenRouter's shape depends on the model family.
MODELS = {name: p.models[0] for name, p in PERSONALITIES.items()}
READABLE = {
    "reasoning_content": "reasoning_content",
    "reasoning": "reasoning",
    "openrouter": "reasoning",
    "gemini": "reasoning_content",
    "copilot": "reasoning_text",
}
STRICT = {"mistral", "groq", "cerebras", "strict-custom"}
Json = Any


def _stop_all(running: dict[str, ChatEmulator]) -> None:
    with ThreadPoolExecutor() as pool:  # each stop waits out the server's shutdown ticks
        list(pool.map(ChatEmulator.stop, running.values()))


@pytest.fixture(scope="module")
def emulators() -> Iterator[dict[str, ChatEmulator]]:
    running = {name: ChatEmulator(name).start() for name in PERSONALITIES}
    yield running
    _stop_all(running)


@pytest.fixture(scope="module")
def twins() -> Iterator[dict[str, ChatEmulator]]:
    """Second instances with the same default secret: what a restarted emulator process is."""
    running = {
        name: ChatEmulator(name).start() for name in ("openrouter", "gemini-openai", "copilot")
    }
    yield running
    _stop_all(running)


# --- a small client, written against the documented wire shapes --------------------------------


def post(emu: ChatEmulator, body: Json, headers: dict[str, str] | None = None) -> httpx.Response:
    return HTTP.post(
        f"{emu.base_url}/chat/completions", json=body, headers=AUTH if headers is None else headers
    )


def stream_lines(emu: ChatEmulator, body: Json) -> list[str]:
    with HTTP.stream(
        "POST", f"{emu.base_url}/chat/completions", json={**body, "stream": True}, headers=AUTH
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return [line for line in response.iter_lines() if line]


def stream_chunks(emu: ChatEmulator, body: Json) -> list[Json]:
    lines = stream_lines(emu, body)
    assert lines[-1] == "data: [DONE]"
    return [orjson.loads(line[6:]) for line in lines[:-1] if line.startswith("data: ")]


def _merge_call(calls: list[Json], part: Json) -> None:
    while len(calls) <= part["index"]:
        calls.append({"function": {"name": "", "arguments": ""}})
    call = calls[part["index"]]
    for key, value in part.items():
        if key == "function":
            call["function"]["name"] += value.get("name") or ""
            call["function"]["arguments"] += value.get("arguments") or ""
        elif key != "index":
            call[key] = value


def _merge_details(items: list[Json], part: Json) -> None:
    """OpenRouter fragments merge per (index, type); strings concatenate, signatures replace."""
    same = [i for i in items if (i["index"], i["type"]) == (part["index"], part["type"])]
    if not same:
        items.append(dict(part))
        return
    for key, value in part.items():
        if key in ("text", "summary", "data") and isinstance(value, str):
            same[0][key] = same[0].get(key, "") + value
        elif value not in ("", None):
            same[0][key] = value


def _merge_content(message: Json, value: Json) -> None:
    current = message.get("content")
    if isinstance(value, list):  # Mistral thinking chunks
        chunks = current if isinstance(current, list) else []
        for chunk in value:
            last = chunks[-1] if chunks else None
            if last and last["type"] == chunk["type"] == "thinking":
                last["thinking"][0]["text"] += chunk["thinking"][0]["text"]
            else:
                chunks.append(copy.deepcopy(chunk))
        message["content"] = chunks
    elif isinstance(value, str) and isinstance(current, list):
        if value:
            if current[-1]["type"] == "text":
                current[-1]["text"] += value
            else:
                current.append({"type": "text", "text": value})
    elif isinstance(value, str):
        message["content"] = (current or "") + value
    else:
        message.setdefault("content", value)


def fold(chunks: list[Json]) -> tuple[Json, str | None]:
    """The assistant message and finish reason a streamed response adds up to."""
    message: Json = {}
    finish = None
    for chunk in chunks:
        for choice in chunk["choices"]:
            finish = choice["finish_reason"] or finish
            for key, value in choice["delta"].items():
                if key == "tool_calls":
                    for part in value:
                        _merge_call(message.setdefault("tool_calls", []), part)
                elif key == "reasoning_details":
                    for part in value:
                        _merge_details(message.setdefault("reasoning_details", []), part)
                elif key == "content":
                    _merge_content(message, value)
                elif key in ("role", "extra_content", "reasoning_opaque"):
                    message[key] = value  # the latest opaque blob is the valid one
                elif isinstance(value, str):
                    message[key] = (message.get(key) or "") + value
                else:
                    message.setdefault(key, value)
    return message, finish


def view(shape: str, message: Json) -> Json:
    """Shape-independent summary: readable reasoning, answer text, tool calls, signed carriers."""
    content = message.get("content")
    if shape == "mistral":
        reasoning = "".join(c["thinking"][0]["text"] for c in content if c["type"] == "thinking")
        text = "".join(c["text"] for c in content if c["type"] == "text")
    else:
        reasoning, text = message.get(READABLE[shape]), content or ""
    calls = [
        (c["id"], c["function"]["name"], c["function"]["arguments"], c.get("extra_content"))
        for c in message.get("tool_calls") or ()
    ]
    native = {
        key: message.get(key) for key in ("reasoning_details", "extra_content", "reasoning_opaque")
    }
    return {"reasoning": reasoning, "text": text, "calls": calls, "native": native}


def replay(name: str, message: Json) -> Json:
    """The assistant message a well-behaved client sends back to this personality."""
    shape = PERSONALITIES[name].shape
    keep = {"role", "content", "tool_calls"}
    if name not in STRICT and shape != "mistral":
        keep |= {READABLE[shape], "reasoning_details", "extra_content", "reasoning_opaque"}
    out = {k: copy.deepcopy(v) for k, v in message.items() if k in keep}
    out["role"] = "assistant"
    for call in out.get("tool_calls") or ():
        call.pop("index", None)
    return out


def tool_result(message: Json, text: str) -> Json:
    return {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": text}


def ask(emu: ChatEmulator, messages: list[Json], *, streamed: bool, **extra: Any) -> Json:
    body = {
        "model": MODELS[emu.personality.name],
        "messages": messages,
        "tools": [WEATHER],
        **extra,
    }
    if streamed:
        message, _ = fold(stream_chunks(emu, body))
        return message
    response = post(emu, body)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]


# --- public surface ----------------------------------------------------------------------------


def test_public_api_is_curated_and_sorted() -> None:
    assert testing.__all__ == sorted(testing.__all__)
    for name in testing.__all__:
        assert getattr(testing, name) is not None


def test_unknown_personality_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown personality"):
        ChatEmulator("nope")


# --- answers in each provider's shape -----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PERSONALITIES))
@pytest.mark.parametrize("with_tools", [True, False], ids=["tools", "text"])
def test_answers_whole_and_streamed_alike(
    emulators: dict[str, ChatEmulator], name: str, with_tools: bool
) -> None:
    emu = emulators[name]
    shape = emu.personality.shape
    body: Json = {"model": MODELS[name], "messages": [SYSTEM, {"role": "user", "content": "Rome?"}]}
    if with_tools:
        body["tools"] = [WEATHER]
    whole = post(emu, body).json()
    assert whole["object"] == "chat.completion"
    assert whole["model"] == MODELS[name]
    choice = whole["choices"][0]
    assert choice["finish_reason"] == ("tool_calls" if with_tools else "stop")
    message = choice["message"]
    summary = view(shape, message)
    assert summary["reasoning"].startswith("Turn 1:")
    if with_tools:
        assert [(c[1], orjson.loads(c[2])) for c in summary["calls"]] == [
            ("weather", {"location": "Rome?"})
        ]
    else:
        assert summary["text"] and not summary["calls"]

    chunks = stream_chunks(emu, body)
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    folded, finish = fold(chunks)
    assert finish == choice["finish_reason"]
    assert view(shape, folded) == summary


def test_deepseek_shape_matches_the_recorded_fixture(emulators: dict[str, ChatEmulator]) -> None:
    body = {"model": "deepseek-reasoner", "messages": [{"role": "user", "content": "hi"}]}
    deltas = [c["choices"][0]["delta"] for c in stream_chunks(emulators["deepseek"], body)]
    assert deltas[0] == {"role": "assistant", "content": None, "reasoning_content": ""}
    assert deltas[1]["content"] is None and deltas[1]["reasoning_content"]
    assert deltas[-1] == {"content": "", "reasoning_content": None}


def test_openrouter_streams_merged_fragments_with_processing_comments(
    emulators: dict[str, ChatEmulator],
) -> None:
    emu = emulators["openrouter"]
    body = {"model": "anthropic/claude-sonnet-4.5", "messages": [{"role": "user", "content": "x"}]}
    lines = stream_lines(emu, {**body, "stream": True})
    assert lines[0] == ": OPENROUTER PROCESSING"
    details = post(emu, body).json()["choices"][0]["message"]["reasoning_details"]
    assert [(d["type"], d["format"]) for d in details] == [
        ("reasoning.text", "anthropic-claude-v1")
    ]
    assert 300 <= len(details[0]["signature"]) <= 400

    gpt = post(emu, {**body, "model": "openai/gpt-5"}).json()["choices"][0]["message"]
    kinds = [(d["type"], d["format"]) for d in gpt["reasoning_details"]]
    assert kinds == [
        ("reasoning.summary", "openai-responses-v1"),
        ("reasoning.encrypted", "openai-responses-v1"),
    ]
    assert gpt["reasoning_details"][0]["id"] == gpt["reasoning_details"][1]["id"]
    assert gpt["reasoning_details"][1]["data"].startswith("gAAAAAB")

    gemini = post(emu, {**body, "model": "google/gemini-3-pro-preview"}).json()
    kinds = [(d["type"], d["format"]) for d in gemini["choices"][0]["message"]["reasoning_details"]]
    assert kinds == [
        ("reasoning.text", "google-gemini-v1"),
        ("reasoning.encrypted", "google-gemini-v1"),
    ]


def test_gemini_signs_the_first_call_or_the_text_turn(emulators: dict[str, ChatEmulator]) -> None:
    emu = emulators["gemini-openai"]
    call_turn = ask(emu, [{"role": "user", "content": "Oslo?"}], streamed=False)
    assert call_turn["tool_calls"][0]["extra_content"]["google"]["thought_signature"]
    assert "extra_content" not in call_turn
    text_turn = post(
        emu, {"model": "gemini-3-pro-preview", "messages": [{"role": "user", "content": "hi"}]}
    ).json()["choices"][0]["message"]
    assert text_turn["extra_content"]["google"]["thought_signature"]


def test_copilot_streams_a_fresh_opaque_blob_before_the_tool_call(
    emulators: dict[str, ChatEmulator],
) -> None:
    body = {"model": "claude-sonnet-4.5", "messages": [{"role": "user", "content": "x"}]}
    deltas = [
        c["choices"][0]["delta"]
        for c in stream_chunks(emulators["copilot"], {**body, "tools": [WEATHER]})
    ]
    keys = [next(iter(d)) for d in deltas if "reasoning_opaque" in d or "reasoning_text" in d]
    assert keys[0] == "reasoning_text"  # the opaque value arrives after text has started
    opaque = [d["reasoning_opaque"] for d in deltas if "reasoning_opaque" in d]
    assert len(opaque) == 2 and opaque[0] != opaque[1]
    first_call = next(i for i, d in enumerate(deltas) if "tool_calls" in d)
    assert deltas[first_call - 1] == {"reasoning_opaque": opaque[1]}


# --- the scripted tool loop ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PERSONALITIES))
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_tool_loop_runs_three_turns(
    emulators: dict[str, ChatEmulator], name: str, streamed: bool
) -> None:
    emu = emulators[name]
    shape = emu.personality.shape
    history: list[Json] = [SYSTEM, {"role": "user", "content": "Weather in Florence?"}]
    first = ask(emu, history, streamed=streamed)
    history += [replay(name, first), tool_result(first, "40 C")]
    answer = ask(emu, history, streamed=streamed)
    assert "40 C" in view(shape, answer)["text"] and not answer.get("tool_calls")
    history += [replay(name, answer), {"role": "user", "content": "And in Oslo?"}]
    second = ask(emu, history, streamed=streamed)
    history += [replay(name, second), tool_result(second, "-3 C")]
    final = ask(emu, history, streamed=streamed)
    assert "-3 C" in view(shape, final)["text"]

    turns = [view(shape, m)["reasoning"] for m in (first, answer, second, final)]
    assert [t.split(":")[0] for t in turns] == ["Turn 1", "Turn 2", "Turn 3", "Turn 4"]
    assert len(set(turns)) == 4
    ids = [first["tool_calls"][0]["id"], second["tool_calls"][0]["id"]]
    assert ids[0] != ids[1]
    assert orjson.loads(second["tool_calls"][0]["function"]["arguments"]) == {
        "location": "And in Oslo?"
    }
    assert all(r.status == 200 for r in emu.received[-4:])


def test_the_script_is_deterministic(emulators: dict[str, ChatEmulator]) -> None:
    emu = emulators["plain"]
    messages = [{"role": "user", "content": "same question"}]
    once, twice = (ask(emu, messages, streamed=False) for _ in range(2))
    assert once == twice
    assert (
        once["tool_calls"][0]["id"].startswith("call_") and len(once["tool_calls"][0]["id"]) == 17
    )


# --- must-echo ----------------------------------------------------------------------------------


def _tool_turn_history(name: str, emu: ChatEmulator, **overrides: Any) -> list[Json]:
    """system, user, assistant tool call (index 2) with ``overrides`` applied, tool result."""
    first = ask(emu, [SYSTEM, {"role": "user", "content": "Weather?"}], streamed=False)
    assistant = replay(name, first)
    for key, value in overrides.items():
        if value is _ABSENT:
            assistant.pop(key, None)
        else:
            assistant[key] = value
    return [SYSTEM, {"role": "user", "content": "Weather?"}, assistant, tool_result(first, "sun")]


_ABSENT = object()
DEEPSEEK_MISSING = "Missing `reasoning_content` field in the assistant message at message index 2."
DEEPSEEK_EMPTY = "The `reasoning_content` in the thinking mode must be passed back to the API."
KIMI_MISSING = (
    "thinking is enabled but reasoning_content is missing in assistant tool call message at index 2"
)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("deepseek", _ABSENT, DEEPSEEK_MISSING),
        ("deepseek", "", DEEPSEEK_EMPTY),
        ("deepseek", None, DEEPSEEK_EMPTY),
        ("mimo", _ABSENT, DEEPSEEK_MISSING),
        ("mimo", "", DEEPSEEK_EMPTY),
        ("kimi", _ABSENT, KIMI_MISSING),
        ("kimi", "", KIMI_MISSING),
        ("kimi", None, KIMI_MISSING),
    ],
)
def test_must_echo_rejects_a_tool_call_turn_without_reasoning(
    emulators: dict[str, ChatEmulator], name: str, value: object, expected: str
) -> None:
    emu = emulators[name]
    history = _tool_turn_history(name, emu, reasoning_content=value)
    response = post(emu, {"model": MODELS[name], "messages": history, "tools": [WEATHER]})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == expected
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert emu.received[-1].status == 400


@pytest.mark.parametrize("name", ["deepseek", "kimi", "mimo"])
@pytest.mark.parametrize("value", [" ", "kept reasoning"])
def test_must_echo_accepts_a_pad_or_the_reasoning(
    emulators: dict[str, ChatEmulator], name: str, value: str
) -> None:
    emu = emulators[name]
    history = _tool_turn_history(name, emu, reasoning_content=value)
    # A plain text turn without reasoning is not a tool-call turn: no echo needed.
    history += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}]
    response = post(emu, {"model": MODELS[name], "messages": history, "tools": [WEATHER]})
    assert response.status_code == 200, response.text


# --- strict schemas -----------------------------------------------------------------------------


def test_mistral_rejects_extra_assistant_keys_with_422(emulators: dict[str, ChatEmulator]) -> None:
    emu = emulators["mistral"]
    history = _tool_turn_history("mistral", emu, reasoning_content="why")
    response = post(emu, {"model": MODELS["mistral"], "messages": history, "tools": [WEATHER]})
    assert response.status_code == 422
    assert response.json() == {
        "object": "error",
        "message": {
            "detail": [
                {
                    "type": "extra_forbidden",
                    "loc": ["body", "messages", 2, "assistant", "reasoning_content"],
                    "msg": "Extra inputs are not permitted",
                    "input": "why",
                }
            ]
        },
        "type": "invalid_request_message_error",
        "param": None,
        "code": None,
    }


def test_mistral_rejects_extra_tool_call_and_top_level_keys(
    emulators: dict[str, ChatEmulator],
) -> None:
    emu = emulators["mistral"]
    history = _tool_turn_history("mistral", emu)
    history[2]["tool_calls"][0]["extra_content"] = {"google": {}}
    body = {
        "model": MODELS["mistral"],
        "messages": history,
        "reasoning_effort": "high",
        "stream_options": {"include_usage": True},
    }
    response = post(emu, body)
    assert response.status_code == 422
    locs = [d["loc"] for d in response.json()["message"]["detail"]]
    assert locs == [
        ["body", "reasoning_effort"],
        ["body", "stream_options", "include_usage"],
        ["body", "messages", 2, "assistant", "tool_calls", 0, "extra_content"],
    ]


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("groq", "reasoning_content"),
        ("groq", "reasoning"),
        ("strict-custom", "reasoning_content"),
        ("strict-custom", "reasoning_details"),
    ],
)
def test_groq_wording_names_the_unsupported_property(
    emulators: dict[str, ChatEmulator], name: str, field: str
) -> None:
    emu = emulators[name]
    history = _tool_turn_history(name, emu, **{field: "why"})
    response = post(emu, {"model": MODELS[name], "messages": history, "tools": [WEATHER]})
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": (
                "'messages.2' : for 'role:assistant' the following must be satisfied"
                f"[('messages.2' : property '{field}' is unsupported)]"
            ),
            "type": "invalid_request_error",
        }
    }


def test_cerebras_wording_names_the_property_path(emulators: dict[str, ChatEmulator]) -> None:
    emu = emulators["cerebras"]
    history = _tool_turn_history("cerebras", emu, reasoning_content="why")
    response = post(emu, {"model": MODELS["cerebras"], "messages": history, "tools": [WEATHER]})
    assert response.status_code == 400
    path = "messages.2.assistant.reasoning_content"
    assert response.json() == {
        "message": f"{path}: property '{path}' is unsupported",
        "type": "invalid_request_error",
        "param": "validation_error",
        "code": "wrong_api_format",
    }


def test_cerebras_reads_reasoning_back(emulators: dict[str, ChatEmulator]) -> None:
    # Recorded: Cerebras accepted an assistant turn replaying `reasoning` (pydantic-ai cassette
    # test_cerebras_thinking_part_survives_multiturn); only `reasoning_content` is rejected.
    emu = emulators["cerebras"]
    history = _tool_turn_history("cerebras", emu, reasoning="I looked it up.")
    response = post(emu, {"model": MODELS["cerebras"], "messages": history, "tools": [WEATHER]})
    assert response.status_code == 200, response.text


def test_strict_custom_invites_a_replay_it_then_refuses(emulators: dict[str, ChatEmulator]) -> None:
    emu = emulators["strict-custom"]
    first = ask(emu, [{"role": "user", "content": "Weather?"}], streamed=False)
    assert first["reasoning_content"]
    naive = {k: first[k] for k in ("role", "content", "reasoning_content", "tool_calls")}
    history = [{"role": "user", "content": "Weather?"}, naive, tool_result(first, "sun")]
    response = post(emu, {"model": MODELS["strict-custom"], "messages": history})
    assert response.status_code == 400
    assert "property 'reasoning_content' is unsupported" in response.json()["error"]["message"]


# --- signed carriers: tampering, omissions, restarts --------------------------------------------


def _tamper(value: str) -> str:
    middle = len(value) // 2
    return value[:middle] + ("A" if value[middle] != "A" else "B") + value[middle + 1 :]


def _tool_loop(emu: ChatEmulator, model: str) -> tuple[Json, list[Json]]:
    """First tool-call turn and the well-formed history that replays it."""
    first = ask(emu, [{"role": "user", "content": "Weather?"}], streamed=False, model=model)
    history = [
        {"role": "user", "content": "Weather?"},
        replay(emu.personality.name, first),
        tool_result(first, "sun"),
    ]
    return first, history


def _send(emu: ChatEmulator, model: str, history: list[Json]) -> httpx.Response:
    return post(emu, {"model": model, "messages": history, "tools": [WEATHER]})


def _openrouter_raw(response: httpx.Response) -> tuple[str, str]:
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["message"], error["code"]) == ("Provider returned error", 400)
    return error["metadata"]["raw"], error["metadata"]["provider_name"]


@pytest.mark.parametrize(
    ("model", "position", "field", "wording", "provider"),
    [
        (
            "anthropic/claude-sonnet-4.5",
            0,
            "signature",
            "messages.1.content.0: Invalid `signature` in `thinking` block",
            "Anthropic",
        ),
        ("anthropic/claude-sonnet-4.5", 0, "text", "Invalid `signature` in `thinking` block", None),
        ("openai/gpt-5", 1, "data", "could not be verified", "OpenAI"),
        ("openai/gpt-5", 0, "summary", "invalid_encrypted_content", None),
        ("google/gemini-3-pro-preview", 1, "data", "Corrupted thought signature.", "Google"),
        ("google/gemini-3-pro-preview", 0, "text", "Corrupted thought signature.", None),
    ],
)
def test_openrouter_verifies_reasoning_details(
    emulators: dict[str, ChatEmulator],
    twins: dict[str, ChatEmulator],
    model: str,
    position: int,
    field: str,
    wording: str,
    provider: str | None,
) -> None:
    emu, restarted = emulators["openrouter"], twins["openrouter"]
    _, history = _tool_loop(emu, model)
    assert _send(emu, model, history).status_code == 200
    tampered = copy.deepcopy(history)
    item = tampered[1]["reasoning_details"][position]
    item[field] = _tamper(item[field]) if field in ("signature", "data") else item[field] + " (x)"
    raw, name = _openrouter_raw(_send(emu, model, tampered))
    assert wording in raw
    assert provider is None or name == provider
    assert not set(restarted.issued) & {
        d.get("signature") or d.get("data") for d in history[1]["reasoning_details"]
    }
    assert _send(restarted, model, history).status_code == 200
    assert _send(restarted, model, tampered).status_code == 400


def test_openrouter_gemini_requires_reasoning_details_on_tool_turns(
    emulators: dict[str, ChatEmulator],
) -> None:
    emu, model = emulators["openrouter"], "google/gemini-3-pro-preview"
    _, history = _tool_loop(emu, model)
    for stripped in (_ABSENT, [], history[1]["reasoning_details"][:1]):
        bare = copy.deepcopy(history)
        if stripped is _ABSENT:
            del bare[1]["reasoning_details"]
        else:
            bare[1]["reasoning_details"] = stripped
        response = _send(emu, model, bare)
        assert response.status_code == 400
        assert response.json()["error"]["message"].startswith(
            "Gemini models require OpenRouter reasoning details to be preserved in each request"
        )
    del bare[1]["reasoning_details"]
    assert _send(emu, "anthropic/claude-sonnet-4.5", bare).status_code == 200  # Gemini only


def test_gemini_openai_requires_a_signature_on_the_first_call(
    emulators: dict[str, ChatEmulator],
) -> None:
    emu, model = emulators["gemini-openai"], "gemini-3-pro-preview"
    _, history = _tool_loop(emu, model)
    history.insert(0, SYSTEM)
    assert _send(emu, model, history).status_code == 200
    missing = copy.deepcopy(history)
    del missing[2]["tool_calls"][0]["extra_content"]
    response = _send(emu, model, missing)
    assert response.status_code == 400
    assert response.json() == [
        {
            "error": {
                "code": 400,
                "message": (
                    "Function call is missing a thought_signature in functionCall parts. This "
                    "is required for tools to work correctly, and missing thought_signature "
                    "may lead to degraded model performance. Additional data, function call "
                    "`default_api:weather` , position 2. Please refer to "
                    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
                ),
                "status": "INVALID_ARGUMENT",
            }
        }
    ]
    assert _send(emu, "gemini-2.5-pro", missing).status_code == 200  # Gemini 3 only


@pytest.mark.parametrize(
    ("signature", "ok"),
    [
        (SKIP_THOUGHT_SIGNATURE, True),
        ("", False),
        ("   ", False),
        (None, False),
        ("tampered", False),
        ("edited-arguments", False),
    ],
)
def test_gemini_openai_verifies_call_signatures(
    emulators: dict[str, ChatEmulator],
    twins: dict[str, ChatEmulator],
    signature: str | None,
    ok: bool,
) -> None:
    model = "gemini-3-pro-preview"
    _, history = _tool_loop(emulators["gemini-openai"], model)
    call = history[1]["tool_calls"][0]
    google = call["extra_content"]["google"]
    if signature == "tampered":
        google["thought_signature"] = _tamper(google["thought_signature"])
    elif signature == "edited-arguments":
        call["function"]["arguments"] = '{"location": "Paris"}'
    else:
        google["thought_signature"] = signature
    response = _send(twins["gemini-openai"], model, history)
    assert response.status_code == (200 if ok else 400), response.text
    if not ok:
        assert response.json() == [
            {
                "error": {
                    "code": 400,
                    "message": "Corrupted thought signature.",
                    "status": "INVALID_ARGUMENT",
                }
            }
        ]


def test_gemini_openai_verifies_text_turn_signatures(emulators: dict[str, ChatEmulator]) -> None:
    emu = emulators["gemini-openai"]
    model = "gemini-3-pro-preview"
    messages = [{"role": "user", "content": "hi"}]
    answer = post(emu, {"model": model, "messages": messages}).json()["choices"][0]["message"]
    history = [*messages, replay("gemini-openai", answer), {"role": "user", "content": "more"}]
    assert post(emu, {"model": model, "messages": history}).status_code == 200
    history[1]["content"] += " (edited)"
    response = post(emu, {"model": model, "messages": history})
    assert response.status_code == 400
    assert response.json()[0]["error"]["message"] == "Corrupted thought signature."


def test_copilot_keeps_only_the_latest_opaque_blob(
    emulators: dict[str, ChatEmulator], twins: dict[str, ChatEmulator]
) -> None:
    emu, model = emulators["copilot"], "claude-sonnet-4.5"
    question = {"role": "user", "content": "Weather?"}
    chunks = stream_chunks(emu, {"model": model, "messages": [question], "tools": [WEATHER]})
    folded, _ = fold(chunks)
    history = [question, replay("copilot", folded), tool_result(folded, "sun")]
    assert _send(emu, model, history).status_code == 200

    stale = copy.deepcopy(history)
    deltas = [c["choices"][0]["delta"] for c in chunks]
    stale[1]["reasoning_opaque"] = next(
        d["reasoning_opaque"] for d in deltas if "reasoning_opaque" in d
    )
    response = _send(emu, model, stale)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "messages.1.content.0: Invalid `signature` in `thinking` block"
    )
    for key, edit in (("reasoning_opaque", _tamper), ("reasoning_text", str.upper)):
        edited = copy.deepcopy(history)
        edited[1][key] = edit(edited[1][key])
        assert _send(emu, model, edited).status_code == 400
    assert _send(twins["copilot"], model, history).status_code == 200
    assert _send(twins["copilot"], model, stale).status_code == 400


def test_a_different_secret_rejects_values_from_the_default_one(
    emulators: dict[str, ChatEmulator],
) -> None:
    model = "anthropic/claude-sonnet-4.5"
    _, history = _tool_loop(emulators["openrouter"], model)
    with ChatEmulator("openrouter", secret=b"another secret") as other:
        raw, _ = _openrouter_raw(_send(other, model, history))
    assert "Invalid `signature` in `thinking` block" in raw


# --- controls: failures, cuts, pacing, auth, records --------------------------------------------


def test_fail_next_queues_responses_before_normal_handling(
    emulators: dict[str, ChatEmulator],
) -> None:
    emu = emulators["plain"]
    before = len(emu.received)
    body = {"model": "demo-reasoner", "messages": [{"role": "user", "content": "hi"}]}
    custom = {"error": {"message": "Rate limit reached", "type": "rate_limit"}}
    emu.fail_next(status=429, body=custom, headers={"retry-after": "0"})
    emu.fail_next(503)
    first, second, third = (post(emu, body) for _ in range(3))
    assert (first.status_code, first.json(), first.headers["retry-after"]) == (429, custom, "0")
    assert second.status_code == 503 and second.json()["error"]["message"]
    assert third.status_code == 200
    assert [r.status for r in emu.received[before:]] == [429, 503, 200]
    assert all(r.body == body for r in emu.received[before:])


def test_cut_stream_after_drops_the_connection_without_done(
    emulators: dict[str, ChatEmulator],
) -> None:
    body = {
        "model": "demo-reasoner",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    }
    emu = emulators["plain"]
    before = len(emu.received)
    received_lines: list[str] = []
    emu.cut_stream_after(3)
    with (
        pytest.raises(httpx.RemoteProtocolError),
        HTTP.stream(
            "POST", f"{emu.base_url}/chat/completions", json=body, headers=AUTH
        ) as response,
    ):
        received_lines.extend(line for line in response.iter_lines() if line)
    assert len(received_lines) == 3 and "data: [DONE]" not in received_lines

    emu.cut_stream_after(2, graceful=True)
    lines = stream_lines(emu, body)
    assert len(lines) == 2 and lines[-1] != "data: [DONE]"
    assert stream_lines(emu, body)[-1] == "data: [DONE]"  # one cut per call
    assert [r.status for r in emu.received[before:]] == [200, 200, 200]


def test_chunk_delay_paces_the_stream(emulators: dict[str, ChatEmulator]) -> None:
    emu = emulators["plain"]
    body = {"model": "demo-reasoner", "messages": [{"role": "user", "content": "hi"}]}
    emu.chunk_delay = 0.02
    try:
        started = time.monotonic()
        chunks = stream_chunks(emu, body)
        assert time.monotonic() - started >= 0.02 * len(chunks)
    finally:
        emu.chunk_delay = 0.0


def test_stream_usage_only_when_asked(emulators: dict[str, ChatEmulator]) -> None:
    emu = emulators["local"]
    body = {"model": "local-reasoner", "messages": [{"role": "user", "content": "hi"}]}
    assert all("usage" not in c for c in stream_chunks(emu, body))
    chunks = stream_chunks(emu, {**body, "stream_options": {"include_usage": True}})
    assert chunks[-1]["choices"] == []
    usage = chunks[-1]["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["completion_tokens_details"]["reasoning_tokens"] > 0


def test_requests_without_a_bearer_token_get_401(emulators: dict[str, ChatEmulator]) -> None:
    emu = emulators["deepseek"]
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    refused = [{}, {"authorization": "Bearer"}, {"authorization": "Basic abc"}]
    with ChatEmulator("deepseek", require_auth=False) as open_emu:
        for headers in refused:
            before = len(emu.received)
            response = post(emu, body, headers=headers)
            assert response.status_code == 401
            assert response.json()["error"]["code"] == "invalid_api_key"
            assert HTTP.get(f"{emu.base_url}/models", headers=headers).status_code == 401
            assert [r.status for r in emu.received[before:]] == [401, 401]
            assert post(open_emu, body, headers=headers).status_code == 200


def test_models_and_records(emulators: dict[str, ChatEmulator]) -> None:
    emu = emulators["groq"]
    listed = HTTP.get(f"{emu.base_url}/models", headers=AUTH).json()
    assert [m["id"] for m in listed["data"]] == list(PERSONALITIES["groq"].models)
    raw = b'{"model": "qwen/qwen3-32b", "messages": [{"role": "user", "content": "hi"}]}'
    headers = {**AUTH, "Content-Type": "application/json", "X-Trace": "t-1"}
    HTTP.post(f"{emu.base_url}/chat/completions", content=raw, headers=headers)
    record = emu.received[-1]
    assert (record.path, record.raw, record.status) == ("/v1/chat/completions", raw, 200)
    assert record.body == orjson.loads(raw)
    assert (
        record.headers["x-trace"] == "t-1"
        and record.headers["authorization"] == AUTH["authorization"]
    )
    bad = HTTP.post(f"{emu.base_url}/chat/completions", content=b"{not json", headers=headers)
    assert bad.status_code == 400
    assert (emu.received[-1].body, emu.received[-1].status) == (None, 400)


def test_cli_serves_in_another_process_and_values_survive_a_restart() -> None:
    model = "anthropic/claude-sonnet-4.5"

    def run_once(history: list[Json] | None) -> tuple[Json, int]:
        process = subprocess.Popen(
            [sys.executable, "-m", "thoughtline.testing", "openrouter"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            base_url = process.stdout.readline().strip()
            assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
            url = f"{base_url}/chat/completions"
            if history is None:
                body = {"model": model, "messages": [{"role": "user", "content": "Weather?"}]}
                response = HTTP.post(url, json={**body, "tools": [WEATHER]}, headers=AUTH)
                return response.json()["choices"][0]["message"], response.status_code
            body = {"model": model, "messages": history, "tools": [WEATHER]}
            return None, HTTP.post(url, json=body, headers=AUTH).status_code
        finally:
            process.terminate()
            assert process.wait(timeout=10) == 0

    first, status = run_once(None)
    assert status == 200
    history = [
        {"role": "user", "content": "Weather?"},
        replay("openrouter", first),
        tool_result(first, "sun"),
    ]
    assert run_once(history)[1] == 200


# --- signing ------------------------------------------------------------------------------------


KINDS = ["anthropic-signature", "openai-encrypted", "gemini-signature", "copilot-opaque"]


@pytest.mark.parametrize("kind", KINDS)
def test_signer_values_look_real_and_verify_against_their_text(kind: Any) -> None:
    signer = Signer()
    value = signer.issue(kind, "some reasoning")
    assert 300 <= len(value) <= 400
    assert value == Signer().issue(kind, "some reasoning")
    assert signer.issued[value] == kind
    assert Signer().verify(kind, value, "some reasoning")
    assert Signer().verify(kind, value)  # no readable text alongside: the embedded tag decides
    assert not Signer().verify(kind, value, "other reasoning")
    assert not Signer(b"other").verify(kind, value)
    other_kind = next(k for k in KINDS if k != kind)
    assert not Signer().verify(other_kind, value)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(KINDS), position=st.integers(min_value=0), replacement=st.characters())
def test_signer_rejects_any_edited_character(kind: Any, position: int, replacement: str) -> None:
    value = Signer().issue(kind, "text")
    position %= len(value)
    edited = value[:position] + replacement + value[position + 1 :]
    assert Signer().verify(kind, edited, "text") == (edited == value)


def test_cli_process_killed_mid_stream_drops_the_connection() -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "thoughtline.testing",
            "deepseek",
            "--no-auth",
            "--chunk-delay",
            "0.05",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = f"{process.stdout.readline().strip()}/chat/completions"
        body = {"model": "deepseek-reasoner", "messages": [{"role": "user", "content": "hi"}]}
        lines: list[str] = []
        with (
            pytest.raises(httpx.RemoteProtocolError),
            HTTP.stream("POST", url, json={**body, "stream": True}) as response,
        ):
            for line in response.iter_lines():
                lines.append(line)
                if len(lines) == 4:
                    process.kill()
        assert "data: [DONE]" not in lines
    finally:
        process.kill()
        process.wait(timeout=10)
