"""The client side of Chat Completions: what a gateway reads from and writes to its own clients.

Owns parsing a client's ``POST /v1/chat/completions`` body into canonical Messages, tools and
pass-through parameters, and rendering a canonical answer back as a Chat completion: one JSON
object, or ``chat.completion.chunk`` SSE frames (``reasoning_content`` on the message and in the
deltas, tool calls by index with their final arguments, the usage chunk when
``stream_options.include_usage`` asked for it, ``data: [DONE]``), plus the OpenAI error object.
Pure functions and small values; no I/O.

Facts: the request and chunk shapes follow the OpenAI Chat Completions reference
(platform.openai.com/docs/api-reference/chat); ``reasoning_content`` on the message and in deltas
is DeepSeek's documented carrier, which clients that display reasoning read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from thoughtline.codecs.face import (
    ClientRequest,
    ClientRequestError,
    ItemMemo,
    Walked,
    array_at,
    walk,
)
from thoughtline.codecs.openai_chat.kinds import TEXT_PARTS
from thoughtline.codecs.openai_chat.wire import API, RC, R
from thoughtline.codecs.openai_chat.wire import text_of as _str
from thoughtline.events import (
    Done,
    Event,
    ReasoningDelta,
    TextDelta,
    ToolCallStarted,
)
from thoughtline.messages import (
    FinishReason,
    Message,
    Part,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)

CLIENT_API = API

__all__ = ["CLIENT_API", "ChunkWriter", "ClientRequest", "ClientRequestError", "completion_json",
           "error_frame", "error_json", "finish_reason", "items_of", "message_json", "models_json",
           "parse_request", "usage_json"]

#: Request keys the gateway interprets itself; every other key is passed to a Chat upstream.
_HANDLED = frozenset({"model", "messages", "tools", "stream", "stream_options", "functions"})


# --- parsing ------------------------------------------------------------------------------------


def items_of(body: Any) -> list[Any] | None:
    """The body's conversation items: the top-level array its parse converts item by item
    (None: the body has none). The gateway checks their nesting apart (``memo``)."""
    return array_at(body, "messages")


def smallest_request(model: str) -> dict[str, Any]:
    """The smallest request a Chat client sends (a one-line question): what a server parses
    at start to load this face before its first real request."""
    return {"model": model, "messages": [{"role": "user", "content": "hi"}]}


def parse_request(body: Any, memo: ItemMemo | None = None) -> ClientRequest:
    """Read a parsed JSON body; raises ``ClientRequestError`` naming what is wrong. ``memo``:
    continues the messages' conversion from an earlier request's (``face.walk``)."""
    if not isinstance(body, Mapping):
        raise ClientRequestError("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ClientRequestError("`model` must be a non-empty string", param="model")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise ClientRequestError("`messages` must be a non-empty array", param="messages")
    options = body.get("stream_options")
    stream = body.get("stream") is True
    walked = walk(raw, _convert, memo)
    return ClientRequest(
        model=model, messages=tuple(walked.messages), tools=_tools(body.get("tools")),
        unread=tuple(dict.fromkeys(walked.unread)),
        params={k: v for k, v in body.items() if k not in _HANDLED}, stream=stream,
        include_usage=stream and isinstance(options, Mapping)
        and options.get("include_usage") is True)


def _convert(raw: Sequence[Any], start: int, walked: Walked) -> None:
    """``raw[start:]`` onto ``walked`` (``face.Convert``): a tool result joins the results
    right before it in one canonical turn."""
    out, unread = walked.messages, walked.unread
    for index in range(start, len(raw)):
        item = raw[index]
        if not isinstance(item, Mapping):
            raise ClientRequestError(f"messages[{index}] must be an object",
                                     param=f"messages[{index}]")
        role = item.get("role")
        if role == "tool":
            result = ToolResult(call_id=_str(item.get("tool_call_id")),
                                content=_content_text(item.get("content"), unread))
            if out and out[-1].role == "tool":  # consecutive results are one canonical turn
                out[-1] = Message(role="tool", parts=(*out[-1].parts, result))
            else:
                out.append(Message(role="tool", parts=(result,)))
        elif role == "assistant":
            out.append(_assistant(item, index, unread))
        elif role in ("system", "developer", "user"):
            text = _content_text(item.get("content"), unread)
            out.append(Message(role="user" if role == "user" else "system",
                               parts=(Text(text=text),)))
        else:
            raise ClientRequestError(f"messages[{index}].role {role!r} is not one of system, "
                                     "developer, user, assistant, tool",
                                     param=f"messages[{index}].role")


def _content_text(content: Any, unread: list[str]) -> str:
    """The text of a message's content; the other parts' types go to ``unread``."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in TEXT_PARTS:
            texts.append(_str(part.get("text")))
        else:  # kinds.DROPPED: no upstream gets it, and the log says so
            unread.append(f"content[{kind if isinstance(kind, str) else '?'}]")
    return "".join(texts)


def _assistant(item: Mapping[str, Any], index: int, unread: list[str]) -> Message:
    parts: list[Part] = []
    thought = _str(item.get(RC)) or _str(item.get(R))
    if thought.strip():
        parts.append(Reasoning(kind="text", text=thought))
    text = _content_text(item.get("content"), unread)
    if text:
        parts.append(Text(text=text))
    calls = item.get("tool_calls")
    for position, call in enumerate(calls if isinstance(calls, list) else ()):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise ClientRequestError(f"messages[{index}].tool_calls[{position}] has no function",
                                     param=f"messages[{index}].tool_calls")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = "" if arguments is None else orjson.dumps(arguments).decode()
        parts.append(ToolCall(id=_str(call.get("id")), name=_str(function.get("name")),
                              arguments=arguments))
    return Message(role="assistant", parts=tuple(parts))


def _tools(raw: Any) -> tuple[ToolSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ClientRequestError("`tools` must be an array", param="tools")
    out = []
    for index, tool in enumerate(raw):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping) or not _str(function.get("name")):
            raise ClientRequestError(f"tools[{index}] must be a function tool with a name",
                                     param=f"tools[{index}]")
        parameters = function.get("parameters")
        out.append(ToolSpec(name=function["name"], description=_str(function.get("description")),
                            parameters=parameters if isinstance(parameters, Mapping)
                            else {"type": "object", "properties": {}}))
    return tuple(out)


# --- rendering ----------------------------------------------------------------------------------

_FINISH: Mapping[FinishReason, str] = {
    "stop": "stop", "tool_calls": "tool_calls", "length": "length",
    "content_filter": "content_filter", "refusal": "content_filter", "pause": "stop",
    "other": "stop",
}


def finish_reason(done: Done) -> str:
    """The Chat ``finish_reason`` for a neutral finish (tool calls win: the client must act)."""
    if done.message.tool_calls:
        return "tool_calls"
    return _FINISH.get(done.finish or "stop", "stop")


def usage_json(usage: Usage) -> dict[str, Any]:
    return {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens}}


def _calls_json(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [{"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": c.arguments}} for c in calls]


def message_json(message: Message) -> dict[str, Any]:
    """An assistant turn as a Chat ``message`` (readable reasoning in ``reasoning_content``)."""
    calls = message.tool_calls
    text = message.text
    out: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    thought = message.reasoning_text()
    if thought:
        out[RC] = thought
    if calls:
        out["tool_calls"] = _calls_json(calls)
    return out


def completion_json(done: Done, *, response_id: str, model: str, created: int) -> dict[str, Any]:
    """The whole ``chat.completion`` object for a finished turn."""
    return {"id": response_id, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message_json(done.message),
                         "finish_reason": finish_reason(done), "logprobs": None}],
            "usage": usage_json(done.usage)}


class ChunkWriter:
    """Renders one streamed answer as ``chat.completion.chunk`` SSE frames (bytes)."""

    __slots__ = ("_calls", "_head", "_started", "include_usage")

    def __init__(self, *, response_id: str, model: str, created: int,
                 include_usage: bool = False) -> None:
        self._head = (b'{"id":' + orjson.dumps(response_id) + b',"object":"chat.completion.chunk"'
                      b',"created":' + str(created).encode() + b',"model":'
                      + orjson.dumps(model))
        self.include_usage = include_usage
        self._started = False
        self._calls: dict[int, str] = {}  # index -> id streamed so far

    def _frame(self, choices: bytes, usage: bytes | None = None) -> bytes:
        tail = b',"usage":' + usage if usage is not None else (
            b',"usage":null' if self.include_usage else b"")
        return b"data: " + self._head + b',"choices":' + choices + tail + b"}\n\n"

    def _delta(self, delta: Mapping[str, Any], finish: str | None = None) -> bytes:
        if not self._started:
            delta = {"role": "assistant", **delta}
            self._started = True
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return self._frame(orjson.dumps([choice]))

    def event(self, event: Event) -> bytes | None:
        """The frame for one delta event (None for events a client is not shown)."""
        if isinstance(event, ReasoningDelta):
            return self._delta({RC: event.text}) if event.text else None
        if isinstance(event, TextDelta):
            return self._delta({"content": event.text}) if event.text else None
        if isinstance(event, ToolCallStarted):
            if not event.id:
                return None  # an id made up at the end (Gemini sends ""): sent whole by finish
            self._calls[event.index] = event.id
            return self._delta({"tool_calls": [{"index": event.index, "id": event.id,
                                                "type": "function", "function": {
                                                    "name": event.name, "arguments": ""}}]})
        # Argument fragments are not forwarded: some upstreams stream their arguments in another
        # spelling than the turn's final text (Anthropic ``input_json_delta`` pieces keep spaces
        # the decoded ``input`` does not), and the client must resend exactly what is stored.
        # ``finish`` sends each call's final arguments in one delta.
        return None

    def finish(self, done: Done) -> bytes:
        """The closing frames: each call's arguments (the whole call when its start was not
        streamed), the finish reason, usage, ``[DONE]``."""
        out = []
        calls = done.message.tool_calls
        rest = [{"index": i, "function": {"arguments": call["function"]["arguments"]}}
                if self._calls.get(i) == calls[i].id else {"index": i, **call}
                for i, call in enumerate(_calls_json(calls))]
        if rest:
            out.append(self._delta({"tool_calls": rest}))
        out.append(self._delta({}, finish_reason(done)))
        if self.include_usage:
            out.append(self._frame(b"[]", orjson.dumps(usage_json(done.usage))))
        out.append(b"data: [DONE]\n\n")
        return b"".join(out)


def error_json(message: str, *, kind: str = "invalid_request_error", code: str | None = None,
               param: str | None = None) -> dict[str, Any]:
    """The OpenAI error object."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_frame(message: str, *, kind: str = "upstream_error", code: str | None = None) -> bytes:
    """An error reported inside an already started stream (the SDK raises on it)."""
    return b"data: " + orjson.dumps(error_json(message, kind=kind, code=code)) + b"\n\n"


def models_json(models: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """``GET /v1/models``: (id, owner) pairs."""
    return {"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                        "owned_by": owner} for m, owner in models]}
