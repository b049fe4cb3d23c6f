"""The three clients of the gateway benchmark, one per face, and the conversation each builds.

Each client runs the same tool loop (per question: user, assistant tool call, tool result,
assistant answer; 4 messages) through one face of a running gateway, as that face's agents do:

- Chat (``/v1/chat/completions``): a client that strips reasoning from what it resends (the
  gateway rehydrates it from its store);
- Messages (``/v1/messages``): Claude Code's way — every content block resent as received, the
  thinking blocks carrying the gateway's minted signature (the gateway verifies it and puts the
  stored reasoning back);
- Responses (``/v1/responses``): Codex's way — stateless, every output item resent as received,
  reasoning items with the gateway's minted ``encrypted_content``.

Beside the client's history each keeps the *floor*: the same conversation as the Chat history
the gateway sends upstream (reasoning put back), which the benchmark sends straight to the
emulator. ``tests/gateway/test_gateway_benchmark_smoke.py`` checks, per face, that the floor's
messages are the messages the gateway sends. Wire shapes here are clients', as the SDKs send them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

MODEL = "ds/deepseek-v4-pro"  # the gateway's "upstream/model"
UPSTREAM_MODEL = "deepseek-v4-pro"
TOOL_RESULT = "Sunny, 21 °C"
NEXT = "Thanks. One more?"
RC = "reasoning_content"  # DeepSeek's reasoning field on the floor's Chat messages
CHAT_TOOLS = [{"type": "function", "function": {
    "name": "weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
MESSAGES_TOOLS = [{"name": "weather", "description": "Current weather for a city",
                   "input_schema": {"type": "object",
                                    "properties": {"city": {"type": "string"}}}}]
RESPONSES_TOOLS = [{"type": "function", "name": "weather",
                    "description": "Current weather for a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]


@dataclass
class Conversation:
    """One face's conversation: what its client resends, and the floor (Chat, with reasoning)."""

    face: str
    client: list[dict[str, Any]] = field(default_factory=list)
    floor: list[dict[str, Any]] = field(default_factory=list)
    #: what every tool call returns (the gateway-floor scenario sends file-sized results)
    tool_result: str = TOOL_RESULT

    def turns(self) -> int:
        return len(self.floor)


def _floor_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _floor_tool(call_id: str, result: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": result}


# --- Chat -----------------------------------------------------------------------------------------


def _chat_ask(conv: Conversation, text: str) -> None:
    conv.client.append({"role": "user", "content": text})
    conv.floor.append({"role": "user", "content": text})


def _chat_body(history: list[dict[str, Any]], model: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": history, "tools": CHAT_TOOLS}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _chat_take(conv: Conversation, answer: dict[str, Any]) -> None:
    message = answer["choices"][0]["message"]
    kept = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
    conv.client.append(kept)
    conv.floor.append({**kept, RC: message.get(RC, "")})
    for call in message.get("tool_calls") or ():
        result = {"role": "tool", "tool_call_id": call["id"], "content": conv.tool_result}
        conv.client.append(result)
        conv.floor.append(result)


# --- Messages -------------------------------------------------------------------------------------


def _messages_ask(conv: Conversation, text: str) -> None:
    conv.client.append({"role": "user", "content": text})
    conv.floor.append({"role": "user", "content": text})


def _messages_body(history: list[dict[str, Any]], model: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": 16000, "messages": history,
                            "tools": MESSAGES_TOOLS}
    if stream:
        body["stream"] = True
    return body


def _messages_take(conv: Conversation, answer: dict[str, Any]) -> None:
    content = answer["content"]
    conv.client.append({"role": "assistant", "content": content})
    thinking = "".join(b.get("thinking", "") for b in content if b["type"] == "thinking")
    text = "".join(b.get("text", "") for b in content if b["type"] == "text")
    calls = [b for b in content if b["type"] == "tool_use"]
    floor: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        # The upstream's own argument bytes go back (the gateway stores them): json.dumps's
        # spacing, as the emulator writes them, not the client's parsed object re-serialized.
        floor["tool_calls"] = [_floor_call(b["id"], b["name"],
                                           json.dumps(b["input"], ensure_ascii=False))
                               for b in calls]
    conv.floor.append({**floor, RC: thinking})
    if calls:
        conv.client.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b["id"], "content": conv.tool_result}
            for b in calls]})
        conv.floor.extend(_floor_tool(b["id"], conv.tool_result) for b in calls)


# --- Responses ------------------------------------------------------------------------------------


def _responses_ask(conv: Conversation, text: str) -> None:
    conv.client.append({"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": text}]})
    conv.floor.append({"role": "user", "content": text})


def _responses_body(history: list[dict[str, Any]], model: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "input": history, "tools": RESPONSES_TOOLS,
                            "store": False, "include": ["reasoning.encrypted_content"]}
    if stream:
        body["stream"] = True
    return body


def _responses_take(conv: Conversation, answer: dict[str, Any]) -> None:
    output = answer["output"]
    conv.client.extend(output)
    thinking = "".join(s["text"] for i in output if i["type"] == "reasoning"
                       for s in i.get("summary") or ())
    text = "".join(c.get("text", "") for i in output if i["type"] == "message"
                   for c in i.get("content") or ())
    calls = [i for i in output if i["type"] == "function_call"]
    floor: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        floor["tool_calls"] = [_floor_call(i["call_id"], i["name"], i["arguments"])
                               for i in calls]
    conv.floor.append({**floor, RC: thinking})
    for item in calls:
        conv.client.append({"type": "function_call_output", "call_id": item["call_id"],
                            "output": conv.tool_result})
        conv.floor.append(_floor_tool(item["call_id"], conv.tool_result))


# --- the faces as data ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Face:
    name: str
    path: str  # under ``…/v1``
    ask: Callable[[Conversation, str], None]
    body: Callable[[list[dict[str, Any]], str, bool], dict[str, Any]]
    take: Callable[[Conversation, dict[str, Any]], None]


FACES = (
    Face(name="chat", path="/chat/completions", ask=_chat_ask, body=_chat_body, take=_chat_take),
    Face(name="messages", path="/messages", ask=_messages_ask, body=_messages_body,
         take=_messages_take),
    Face(name="responses", path="/responses", ask=_responses_ask, body=_responses_body,
         take=_responses_take),
)
BY_NAME = {face.name: face for face in FACES}
TITLES = {"chat": "Chat", "messages": "Messages", "responses": "Responses"}


def build(client: httpx.Client, base: str, face: Face, questions: int) -> Conversation:
    """Run ``questions`` tool-loop questions through ``face`` of the gateway at ``base``."""
    return grow(client, base, face, Conversation(face=face.name), questions)


def grow(client: httpx.Client, base: str, face: Face, conv: Conversation,
         questions: int) -> Conversation:
    """``conv`` continued by ``questions`` more tool-loop questions through the gateway."""
    asked = sum(1 for message in conv.floor if message["role"] == "user")
    for index in range(asked, asked + questions):
        face.ask(conv, f"Weather in city number {index}?")
        for _ in range(2):  # the tool call, then the answer
            body = face.body(conv.client, MODEL, False)
            response = client.post(base + face.path, content=orjson.dumps(body))
            response.raise_for_status()
            face.take(conv, response.json())
    return conv


def next_request(face: Face, conv: Conversation, *, stream: bool, model: str = MODEL) -> bytes:
    """The client's next request (one more question), as bytes."""
    probe = Conversation(face=face.name, client=list(conv.client), tool_result=conv.tool_result)
    face.ask(probe, NEXT)
    return orjson.dumps(face.body(probe.client, model, stream))


def floor_request(conv: Conversation, *, stream: bool) -> bytes:
    """The same next request as the Chat body the gateway sends upstream (reasoning back)."""
    asked = [*conv.floor, {"role": "user", "content": NEXT}]
    return orjson.dumps(_chat_body(asked, UPSTREAM_MODEL, stream))
