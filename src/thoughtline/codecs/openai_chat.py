"""OpenAI-compatible Chat Completions: encode a request for a route, decode and fold responses.

Owns every Chat Completions wire name: ``reasoning_content``, ``reasoning``, ``reasoning_details``,
Gemini-compat ``extra_content.google``, Copilot ``reasoning_text`` / ``reasoning_opaque`` /
``function.thought_signature``. Pure: no I/O, no clock, no globals.

Decoding a whole response and folding its stream go through the same path: the fold rebuilds the
whole ``message`` object from the deltas and hands it to the same decoder, so both give the same
canonical Message by construction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from thoughtline.errors import ProtocolError
from thoughtline.events import Done, ReasoningDelta, TextDelta, ToolCallStarted
from thoughtline.messages import (
    Message,
    Origin,
    Part,
    Reasoning,
    ReasoningKind,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)
from thoughtline.replay import ReplayPlan

_Delta = ReasoningDelta | TextDelta | ToolCallStarted

API = "openai-chat"
RC, R, RD = "reasoning_content", "reasoning", "reasoning_details"
CARRIERS = frozenset({RC, R, RD})

# Namespaces of ``native`` records this codec owns.
NS_OPENROUTER = "openrouter"  # one reasoning_details item, verbatim
NS_GOOGLE = "google"  # extra_content.google, verbatim (message or tool call)
NS_GOOGLE_LEGACY = "google-legacy"  # 2025 top-level message.thought_signature; kept, never sent
NS_COPILOT = "copilot"  # reasoning_text / reasoning_opaque, function.thought_signature
NS_MISTRAL = "mistral"  # a "thinking" content chunk, verbatim; never sent (strict route)

# The documented dummy that lets Gemini 3 accept a function call it did not sign
# (https://ai.google.dev/gemini-api/docs/thought-signatures).
GEMINI_DUMMY_SIGNATURE = "skip_thought_signature_validator"
PAD = " "  # must-echo placeholder: never "" (DeepSeek V4 rejects it), never null

_RD_KINDS: dict[str, ReasoningKind] = {
    "reasoning.text": "text",
    "reasoning.summary": "summary",
    "reasoning.encrypted": "encrypted",
}
_RD_CONCAT = ("text", "summary", "data", "signature")


# --- decode -------------------------------------------------------------------------------------


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()
    details = raw.get("completion_tokens_details") or {}
    prompt_details = raw.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        reasoning_tokens=int(details.get("reasoning_tokens") or 0)
        if isinstance(details, Mapping) else 0,
        cached_tokens=int(prompt_details.get("cached_tokens") or 0)
        if isinstance(prompt_details, Mapping) else 0,
    )


def _details_part(item: Any, origin: Origin) -> Reasoning:
    if not isinstance(item, Mapping):
        raise ProtocolError(f"reasoning_details item is not an object: {item!r:.80}")
    item_type = _str(item.get("type"))
    signature = _str(item.get("signature")) or None
    kind = _RD_KINDS.get(item_type, "encrypted" if item.get("data") else "text")
    if kind == "text" and signature:
        kind = "signed"
    return Reasoning(
        kind=kind, text=_str(item.get("text")) or None, summary=_str(item.get("summary")) or None,
        signature=signature, data=_str(item.get("data")) or None, origin=origin,
        native={NS_OPENROUTER: dict(item)},
    )


def _content_parts(content: Any, origin: Origin) -> list[Part]:
    if isinstance(content, str):
        return [Text(text=content)] if content else []
    if not isinstance(content, list):
        return []
    parts: list[Part] = []
    for chunk in content:
        if not isinstance(chunk, Mapping):
            continue
        if chunk.get("type") == "text" and _str(chunk.get("text")):
            parts.append(Text(text=chunk["text"]))
        elif chunk.get("type") == "thinking":
            # Mistral Magistral: thinking arrives as content chunks of text chunks.
            parts.append(Reasoning(kind="text", text=_thinking_text(chunk.get("thinking")),
                                   origin=origin, native={NS_MISTRAL: dict(chunk)}))
    return parts


def _thinking_text(inner: Any) -> str:
    if isinstance(inner, list):
        return "".join(_str(c.get("text")) for c in inner if isinstance(c, Mapping))
    return _str(inner)


def _is_text_chunk(chunk: Any) -> bool:
    return isinstance(chunk, dict) and chunk.get("type") == "text" and isinstance(
        chunk.get("text"), str)


def _tool_call(raw: Any, position: int, response_id: str) -> ToolCall:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("function"), Mapping):
        raise ProtocolError(f"tool call without a function object: {raw!r:.120}")
    function = raw["function"]
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = "" if arguments is None else _json_text(arguments)
    native: dict[str, Any] = {}
    extra = raw.get("extra_content")
    if isinstance(extra, Mapping) and isinstance(extra.get("google"), Mapping):
        native[NS_GOOGLE] = dict(extra["google"])
    if _str(function.get("thought_signature")):
        native[NS_COPILOT] = {"thought_signature": function["thought_signature"]}
    call_id = _str(raw.get("id")) or _synthetic_call_id(response_id, position)
    return ToolCall(id=call_id, name=_str(function.get("name")), arguments=arguments,
                    native=native)


def _synthetic_call_id(response_id: str, position: int) -> str:
    # Gemini's compatible endpoint returns "" ids; results must still reference the call.
    seed = f"{response_id}:{position}".encode()
    return "call_tl_" + hashlib.sha256(seed).hexdigest()[:20]


def _json_text(value: Any) -> str:
    import orjson

    return orjson.dumps(value).decode()


def message_from_wire(wire: Mapping[str, Any], origin: Origin, *, response_id: str = "",
                      incomplete: bool = False) -> Message:
    """Decode one assistant ``message`` object (or the fold's rebuilt one) to a canonical turn."""
    parts: list[Part] = []
    flat = next((t for t in (_str(wire.get(RC)), _str(wire.get(R))) if t.strip()), "")
    if flat:
        parts.append(Reasoning(kind="text", text=flat, origin=origin, complete=not incomplete))
    details = wire.get(RD)
    if isinstance(details, list):
        parts.extend(_details_part(item, origin) for item in details)
    native: dict[str, Any] = {}
    copilot = {k: wire[k] for k in ("reasoning_text", "reasoning_opaque") if _str(wire.get(k))}
    if copilot:
        native[NS_COPILOT] = copilot
        if not flat and _str(copilot.get("reasoning_text")).strip():
            parts.append(Reasoning(kind="text", text=copilot["reasoning_text"], origin=origin))
    extra = wire.get("extra_content")
    if isinstance(extra, Mapping) and isinstance(extra.get("google"), Mapping):
        native[NS_GOOGLE] = dict(extra["google"])
    if _str(wire.get("thought_signature")):
        native[NS_GOOGLE_LEGACY] = {"thought_signature": wire["thought_signature"]}
    parts.extend(_content_parts(wire.get("content"), origin))
    calls = wire.get("tool_calls")
    if isinstance(calls, list):
        parts.extend(_tool_call(c, i, response_id) for i, c in enumerate(calls))
    if incomplete:
        parts = [_mark_incomplete(p) for p in parts]
    return Message(role="assistant", parts=tuple(parts), origin=origin, incomplete=incomplete,
                   native=native)


def _mark_incomplete(part: Part) -> Part:
    if isinstance(part, Reasoning) and part.complete:
        return Reasoning(kind=part.kind, text=part.text, summary=part.summary,
                         signature=part.signature, data=part.data, complete=False,
                         origin=part.origin, native=part.native)
    return part


def _first_choice(body: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        if isinstance(body.get("error"), Mapping):
            raise ProtocolError(f"provider returned an error object: {body['error']!r:.300}")
        raise ProtocolError("response has no choices[0]: not a Chat Completions response")
    return choices[0]


def decode_response(body: Mapping[str, Any], origin: Origin) -> Done:
    """Decode a whole (non-streamed) Chat Completions response."""
    if not isinstance(body, Mapping):
        raise ProtocolError("response body is not a JSON object")
    choice = _first_choice(body)
    wire = choice.get("message")
    if not isinstance(wire, Mapping):
        raise ProtocolError("choices[0].message is missing or not an object")
    message = message_from_wire(wire, origin, response_id=_str(body.get("id")))
    return Done(message=message, usage=_usage(body.get("usage")),
                finish_reason=choice.get("finish_reason"))


# --- stream fold --------------------------------------------------------------------------------


class StreamFold:
    """Fold ``chat.completion.chunk`` objects into the whole message they describe.

    ``add`` returns the neutral deltas to show while streaming; ``finish`` decodes the rebuilt
    message with ``message_from_wire``. Copilot's ``reasoning_opaque`` keeps the latest blob;
    ``reasoning_details`` fragments merge per (index, type); tool-call fragments per index.
    """

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.response_id = ""
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.saw_chunk = False
        self._text: dict[str, list[str]] = {"content": [], RC: [], R: [], "reasoning_text": []}
        self._details: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._calls: dict[int, dict[str, Any]] = {}
        self._latest: dict[str, Any] = {}
        self._chunks: list[dict[str, Any]] = []  # content-chunk lists (Mistral thinking)

    def add(self, chunk: Mapping[str, Any]) -> list[_Delta]:
        if not isinstance(chunk, Mapping):
            raise ProtocolError("stream chunk is not a JSON object")
        if isinstance(chunk.get("error"), Mapping):
            raise ProtocolError(f"provider sent an error in the stream: {chunk['error']!r:.300}")
        self.saw_chunk = True
        self.response_id = self.response_id or _str(chunk.get("id"))
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        events: list[_Delta] = []
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
            delta = choice.get("delta") or choice.get("message")
            if isinstance(delta, Mapping):
                events.extend(self._delta(delta))
        return events

    def _delta(self, delta: Mapping[str, Any]) -> list[_Delta]:
        events: list[_Delta] = []
        for key, parts in self._text.items():
            piece = _str(delta.get(key))
            if piece:
                parts.append(piece)
        reasoning = _str(delta.get(RC)) or _str(delta.get(R)) or _str(delta.get("reasoning_text"))
        if reasoning:
            events.append(ReasoningDelta(reasoning))
        if _str(delta.get("content")):
            events.append(TextDelta(delta["content"]))
        if isinstance(delta.get("content"), list):
            events.extend(self._merge_chunks(delta["content"]))
        for item in delta.get(RD) or ():
            text = self._merge_detail(item)
            if text and not reasoning:
                events.append(ReasoningDelta(text))
        for raw in delta.get("tool_calls") or ():
            started = self._merge_call(raw)
            if started is not None:
                events.append(started)
        for key in ("reasoning_opaque", "thought_signature"):
            if _str(delta.get(key)):
                self._latest[key] = delta[key]  # Copilot rotates the blob: the latest wins
        extra = delta.get("extra_content")
        if isinstance(extra, Mapping) and isinstance(extra.get("google"), Mapping):
            self._latest.setdefault("google", {}).update(extra["google"])
        return events

    def _merge_chunks(self, chunks: list[Any]) -> list[_Delta]:
        # Mistral Magistral streams its thinking as content-chunk lists, one fragment per delta,
        # and its answer as strings: rebuild the whole content list, in arrival order.
        events: list[_Delta] = []
        for chunk in chunks:
            if not isinstance(chunk, Mapping):
                continue
            if chunk.get("type") == "text":
                if _str(chunk.get("text")):
                    self._text["content"].append(chunk["text"])
                    events.append(TextDelta(chunk["text"]))
                continue
            if self._text["content"]:  # the text so far keeps its place before this chunk
                self._chunks.append({"type": "text", "text": "".join(self._text["content"])})
                self._text["content"].clear()
            if chunk.get("type") == "thinking":
                self._merge_thinking(chunk)
                if _thinking_text(chunk.get("thinking")):
                    events.append(ReasoningDelta(_thinking_text(chunk.get("thinking"))))
            else:
                self._chunks.append(dict(chunk))
        return events

    def _merge_thinking(self, chunk: Mapping[str, Any]) -> None:
        inner = chunk.get("thinking")
        last = self._chunks[-1] if self._chunks else {}
        if not (isinstance(inner, list) and last.get("type") == "thinking"
                and isinstance(last.get("thinking"), list)):
            copied = dict(chunk)
            if isinstance(inner, list):
                copied["thinking"] = [dict(c) if isinstance(c, Mapping) else c for c in inner]
            self._chunks.append(copied)
            return
        for piece in inner:  # the next fragment of the same thinking chunk
            previous = last["thinking"][-1] if last["thinking"] else None
            if _is_text_chunk(piece) and _is_text_chunk(previous):
                previous["text"] += piece["text"]
            else:
                last["thinking"].append(dict(piece) if isinstance(piece, Mapping) else piece)

    def _merge_detail(self, item: Any) -> str:
        if not isinstance(item, Mapping):
            raise ProtocolError(f"reasoning_details delta is not an object: {item!r:.80}")
        index = item.get("index")
        key = (index, item.get("type")) if index is not None else (len(self._details), id(item))
        into = self._details.get(key)
        if into is None:
            self._details[key] = dict(item)
            return _str(item.get("text")) or _str(item.get("summary"))
        for name, value in item.items():
            if name in _RD_CONCAT and isinstance(value, str):
                into[name] = _str(into.get(name)) + value
            elif into.get(name) is None and value is not None:
                into[name] = value
        return _str(item.get("text")) or _str(item.get("summary"))

    def _merge_call(self, raw: Any) -> ToolCallStarted | None:
        if not isinstance(raw, Mapping):
            raise ProtocolError(f"tool_calls delta is not an object: {raw!r:.80}")
        index = raw.get("index", len(self._calls))
        call = self._calls.get(index)
        function = raw.get("function") if isinstance(raw.get("function"), Mapping) else {}
        if call is None:
            call = self._calls[index] = {"id": "", "type": "function",
                                         "function": {"name": "", "arguments": ""}}
        started = not call["function"]["name"] and _str(function.get("name"))
        call["id"] = call["id"] or _str(raw.get("id"))
        call["function"]["name"] = call["function"]["name"] or _str(function.get("name"))
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call["function"]["arguments"] += arguments
        elif isinstance(arguments, Mapping):
            call["function"]["arguments"] = _json_text(arguments)
        if _str(function.get("thought_signature")):
            call["function"]["thought_signature"] = function["thought_signature"]
        extra = raw.get("extra_content")
        if isinstance(extra, Mapping) and isinstance(extra.get("google"), Mapping):
            call.setdefault("extra_content", {"google": {}})["google"].update(extra["google"])
        if started:
            return ToolCallStarted(index=index, id=call["id"], name=call["function"]["name"])
        return None

    def wire_message(self) -> dict[str, Any]:
        """The whole ``message`` object this stream described so far."""
        wire: dict[str, Any] = {"role": "assistant"}
        for key, parts in self._text.items():
            if parts:
                wire[key] = "".join(parts)
        if self._chunks:
            tail = "".join(self._text["content"])
            wire["content"] = [*self._chunks, *([{"type": "text", "text": tail}] if tail else [])]
        if self._details:
            wire[RD] = list(self._details.values())
        if self._calls:
            wire["tool_calls"] = [self._calls[i] for i in sorted(self._calls)]
        if "reasoning_opaque" in self._latest:
            wire["reasoning_opaque"] = self._latest["reasoning_opaque"]
        if "thought_signature" in self._latest:
            wire["thought_signature"] = self._latest["thought_signature"]
        if "google" in self._latest:
            wire["extra_content"] = {"google": self._latest["google"]}
        return wire

    def finish(self, *, complete: bool = True) -> Done:
        """The folded turn; ``complete=False`` marks it (and its reasoning) incomplete."""
        message = message_from_wire(self.wire_message(), self.origin,
                                    response_id=self.response_id, incomplete=not complete)
        return Done(message=message, usage=_usage(self.usage), finish_reason=self.finish_reason)


def fold(chunks: Iterable[Mapping[str, Any]], origin: Origin) -> Done:
    """Fold a whole recorded stream (convenience for tests and the gateway)."""
    state = StreamFold(origin)
    for chunk in chunks:
        state.add(chunk)
    return state.finish()


# --- encode -------------------------------------------------------------------------------------


def _encode_call(call: ToolCall, plan: ReplayPlan, *, dummy_signature: bool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
    wire: dict[str, Any] = {"id": call.id, "type": "function", "function": function}
    if NS_GOOGLE in plan.native:
        if NS_GOOGLE in call.native:
            wire["extra_content"] = {"google": call.native[NS_GOOGLE]}
        elif dummy_signature:
            wire["extra_content"] = {"google": {"thought_signature": GEMINI_DUMMY_SIGNATURE}}
    if NS_COPILOT in plan.native:
        signature = call.native.get(NS_COPILOT, {}).get("thought_signature")
        if signature:
            function["thought_signature"] = signature
    return wire


def _encode_assistant(message: Message, plan: ReplayPlan) -> dict[str, Any]:
    # An interrupted turn is replayed as plain text: its tool calls never ran (and may be cut
    # mid-arguments) and its opaque values may be cut before they were complete.
    calls = () if message.incomplete else message.tool_calls
    text = message.text
    wire: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        # Gemini 3 wants the first call of a step signed; a foreign turn gets the documented dummy.
        unsigned = NS_GOOGLE not in message.native and not any(NS_GOOGLE in c.native
                                                                for c in calls)
        wire["tool_calls"] = [_encode_call(c, plan, dummy_signature=unsigned and i == 0)
                              for i, c in enumerate(calls)]
    carriers = plan.carriers
    if carriers:
        thought = message.reasoning_text()
        has_thought = bool(thought.strip())
        if RC in carriers and (has_thought or plan.pad):
            wire[RC] = thought if has_thought else PAD
        if R in carriers and has_thought:
            wire[R] = thought
        if RD in carriers:
            items = [p.native[NS_OPENROUTER] for p in message.parts
                     if isinstance(p, Reasoning) and p.complete and NS_OPENROUTER in p.native]
            if items:
                wire[RD] = items
    if plan.native and not message.incomplete:
        if NS_GOOGLE in plan.native and NS_GOOGLE in message.native:
            wire["extra_content"] = {"google": message.native[NS_GOOGLE]}
        copilot = message.native.get(NS_COPILOT) if NS_COPILOT in plan.native else None
        if copilot and copilot.get("reasoning_opaque"):
            wire["reasoning_opaque"] = copilot["reasoning_opaque"]
            if copilot.get("reasoning_text"):
                wire["reasoning_text"] = copilot["reasoning_text"]
    return wire


def encode_message(message: Message, plan: ReplayPlan) -> list[dict[str, Any]]:
    """The wire messages for one canonical turn (a tool turn becomes one message per result)."""
    if message.role == "assistant":
        return [_encode_assistant(message, plan)]
    if message.role == "tool":
        return [{"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                for r in message.parts if isinstance(r, ToolResult)]
    return [{"role": message.role, "content": message.text}]


class WireCache:
    """Each stored turn's wire form per plan, derived once and reused (turns are immutable).

    Keyed by object identity; the cache holds the message so the identity stays valid.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[int, Any], tuple[Message, list[dict[str, Any]]]] = {}

    def get(self, message: Message, plan: ReplayPlan) -> list[dict[str, Any]]:
        key = (id(message), plan.key)
        hit = self._entries.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]
        wire = encode_message(message, plan)
        self._entries[key] = (message, wire)
        return wire

    def __len__(self) -> int:
        return len(self._entries)


def encode_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": dict(t.parameters)}}
            for t in tools]


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merged = dict(base[key])
            _deep_merge(merged, value)
            base[key] = merged
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value


def encode_request(history: Sequence[Message], plan: ReplayPlan, *, model: str,
                   tools: Sequence[ToolSpec] = (), params: Mapping[str, Any] | None = None,
                   stream: bool = False, stream_usage: bool = True,
                   cache: WireCache | None = None) -> dict[str, Any]:
    """The request body for ``history`` on a route, shaped by ``plan``. Never mutates history.

    The returned body shares (read-only) native values and cached wire turns: serialize it, do not
    edit it.
    """
    messages: list[dict[str, Any]] = []
    for message in history:
        messages.extend(cache.get(message, plan) if cache is not None
                        else encode_message(message, plan))
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = encode_tools(tools)
    if stream:
        body["stream"] = True
        if stream_usage:
            body["stream_options"] = {"include_usage": True}
    if plan.body_extras:
        _deep_merge(body, plan.body_extras)
    if params:
        _deep_merge(body, params)
    for name in plan.drop_params:
        body.pop(name, None)
    return body


def wire_summary(body: Mapping[str, Any]) -> dict[str, Any]:
    """Which reasoning fields went on the wire, on how many assistant turns (for the log)."""
    carriers: dict[str, int] = {}
    native: dict[str, int] = {}
    pads = assistant = 0
    for message in body.get("messages", ()):
        if message.get("role") != "assistant":
            continue
        assistant += 1
        for key in (RC, R, RD):
            if key in message:
                carriers[key] = carriers.get(key, 0) + 1
        if message.get(RC) == PAD:
            pads += 1
        for key in ("reasoning_opaque", "reasoning_text", "extra_content"):
            if key in message:
                native[key] = native.get(key, 0) + 1
        for call in message.get("tool_calls") or ():
            if "extra_content" in call:
                native["tool_calls.extra_content"] = native.get("tool_calls.extra_content", 0) + 1
            if "thought_signature" in call.get("function", {}):
                native["function.thought_signature"] = (
                    native.get("function.thought_signature", 0) + 1)
    return {"assistant_turns": assistant, "carriers": carriers, "pads": pads, "native": native,
            "body_extras": sorted(k for k in body if k not in _STANDARD_BODY_KEYS)}


_STANDARD_BODY_KEYS = frozenset({"model", "messages", "tools", "stream", "stream_options",
                                 "tool_choice", "temperature", "max_tokens", "top_p"})


# --- endpoint -----------------------------------------------------------------------------------


def endpoint(base_url: str, model: str, *, stream: bool) -> str:
    return base_url.rstrip("/") + "/chat/completions"


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"} if api_key else {}
