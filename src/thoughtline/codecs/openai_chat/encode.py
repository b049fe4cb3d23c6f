"""Encode a request for a route: exactly the plan's carriers, the pad, native values on their own
route, keep-thinking body fields — and nothing of ours on the wire.

A turn's wire messages depend on the turn and the plan only, so the API's turn encoder (``TURNS``,
``codecs.base.TurnEncoder``) is flat: the core's wire cache (``thoughtline.wire.cache``) encodes
each turn once, stores it, splices it into later requests and reuses the walk of a history that
only grew. A turn's after facts are the request log's counts of it (``Counts``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs import foreign
from thoughtline.codecs.base import Encoded, RequestSpec, Walk, profile_of
from thoughtline.codecs.common import deep_merge, merge_params
from thoughtline.codecs.flat import (
    NOTHING,
    Counts,
    FlatTurns,
    cached_body,
    cached_index,
    counted,
)
from thoughtline.codecs.openai_chat.profile import ChatProfile
from thoughtline.codecs.openai_chat.wire import (
    API,
    GEMINI_DUMMY_SIGNATURE,
    NS_COPILOT,
    NS_GOOGLE,
    NS_MERGE,
    NS_OPENROUTER,
    PAD,
    RC,
    RD,
    R,
)
from thoughtline.messages import Message, Opaque, Reasoning, ToolCall, ToolResult, ToolSpec
from thoughtline.replay import ReplayPlan


def _encode_call(call: ToolCall, plan: ReplayPlan, *, own: bool,
                 dummy_signature: bool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
    wire: dict[str, Any] = {"id": call.id, "type": "function", "function": function}
    native = profile_of(plan, ChatProfile).native
    if NS_GOOGLE in native:
        if own and NS_GOOGLE in call.native:
            wire["extra_content"] = {"google": call.native[NS_GOOGLE]}
        elif dummy_signature:
            wire["extra_content"] = {"google": {"thought_signature": GEMINI_DUMMY_SIGNATURE}}
    if NS_COPILOT in native and own:
        signature = call.native.get(NS_COPILOT, {}).get("thought_signature")
        if signature:
            function["thought_signature"] = signature
    return wire


def _encode_assistant(message: Message, plan: ReplayPlan) -> dict[str, Any]:
    # An interrupted turn is replayed as plain text: its tool calls never ran (and may be cut
    # mid-arguments) and its opaque values may be cut before they were complete.
    calls = () if message.incomplete else message.tool_calls
    text = foreign.shown(message, API).text  # another API's blocks as their readable text
    wire: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    own = plan.may_replay(message.origin)
    if calls:
        # Gemini 3 wants the first call of a step signed; a foreign turn gets the documented dummy.
        unsigned = not own or (NS_GOOGLE not in message.native
                               and not any(NS_GOOGLE in c.native for c in calls))
        wire["tool_calls"] = [_encode_call(c, plan, own=own, dummy_signature=unsigned and i == 0)
                              for i, c in enumerate(calls)]
    profile = profile_of(plan, ChatProfile)
    carriers = profile.carriers
    if carriers:
        thought = message.reasoning_text()
        has_thought = bool(thought.strip())
        if RC in carriers and (has_thought or profile.pad):
            wire[RC] = thought if has_thought else PAD
        if R in carriers and has_thought:
            wire[R] = thought
        if RD in carriers:
            # Another model's items (signed, encrypted, or bound to its format) stay home; their
            # readable text has already gone in the plain carriers above.
            items = [p.native[NS_OPENROUTER] for p in message.parts
                     if isinstance(p, Reasoning) and p.complete and NS_OPENROUTER in p.native
                     and plan.may_replay(p.origin)]
            if items:
                wire[RD] = items
    native = profile.native
    if native and own and not message.incomplete:
        if NS_GOOGLE in native and NS_GOOGLE in message.native:
            wire["extra_content"] = {"google": message.native[NS_GOOGLE]}
        copilot = message.native.get(NS_COPILOT) if NS_COPILOT in native else None
        if copilot and copilot.get("reasoning_opaque"):
            wire["reasoning_opaque"] = copilot["reasoning_opaque"]
            if copilot.get("reasoning_text"):
                wire["reasoning_text"] = copilot["reasoning_text"]
        merge = message.native.get(NS_MERGE) if NS_MERGE in native else None
        if merge:  # both fields back as received (the signature covers the text)
            wire.update((k, merge[k]) for k in ("thinking", "thinking_signature") if k in merge)
    return wire


def encode_message(message: Message, plan: ReplayPlan) -> list[dict[str, Any]]:
    """The wire messages for one canonical turn (a tool turn becomes one message per result)."""
    if message.role == "assistant":
        if _nothing_to_say(message):
            return []
        return [_encode_assistant(message, plan)]
    if message.role == "tool":
        return [{"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                for r in message.parts if isinstance(r, ToolResult)]
    if not message.parts:  # an item only its own API reads (a sealed agent_message): nothing
        return []
    return [{"role": message.role, "content": message.text}]


def _nothing_to_say(message: Message) -> bool:
    """An assistant turn made only of other APIs' items with no readable form (Codex's
    ``configuration_update``, a sealed compaction item): Chat has no place for any of it, and an
    empty assistant message would end the conversation the model sees on the assistant."""
    parts = message.parts  # (the first part first: most turns stop there, no generator made)
    return bool(parts) and isinstance(parts[0], Opaque) and all(
        isinstance(p, Opaque) for p in parts) and not foreign.shown(message, API).text


def counts_of(wire: Iterable[Mapping[str, Any]]) -> Counts:
    """The log's counts of wire messages: reasoning fields on the assistant ones."""
    assistant = pads = 0
    carriers: list[str] = []
    native: list[str] = []
    for message in wire:
        if message.get("role") != "assistant":
            continue
        assistant += 1
        carriers += [key for key in (RC, R, RD) if key in message]
        if message.get(RC) == PAD:
            pads += 1
        native += [key for key in ("reasoning_opaque", "reasoning_text", "extra_content",
                                   "thinking", "thinking_signature") if key in message]
        for call in message.get("tool_calls") or ():
            if "extra_content" in call:
                native.append("tool_calls.extra_content")
            if "thought_signature" in call.get("function", {}):
                native.append("function.thought_signature")
    if not assistant:
        return NOTHING
    return Counts(assistant=assistant, pads=pads, carriers=tuple(carriers), native=tuple(native))


class ChatTurns(FlatTurns):
    """The Chat Completions ``TurnEncoder``: a turn is its wire messages."""

    def __init__(self) -> None:
        # chat-4: an assistant turn of other APIs' items only is no message (chat-3 rows held
        # an empty one: not found, so encoded again)
        super().__init__(version="chat-4", items=encode_message, count=counts_of)

    def assemble(self, walk: Walk[None, Counts], spec: RequestSpec,
                 plan: ReplayPlan) -> Encoded:
        body = request_body(list(walk.fragments), plan, model=spec.model, tools=spec.tools,
                            params=spec.params, stream=spec.stream)
        return Encoded(raw=orjson.dumps(body), index=ChatIndex(walk=walk,
                                                               body_extras=body_extras(body)))


TURNS = ChatTurns()


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatIndex:
    """What the log and a rejection read about a request as sent: its walk (each turn's
    counts) and the body's extra top-level fields; no second walk over the body, no parse."""

    walk: Walk[None, Counts]
    body_extras: list[str]

    def summary(self) -> dict[str, Any]:
        return counted(self.walk.afters, self.body_extras)


def encode_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": dict(t.parameters)}}
            for t in tools]




#: The body fields encode_request writes itself: a request param naming one is left out (the
#: conversation, the model and the framing are never a param's to choose).
OWNED = frozenset({"model", "messages", "tools", "stream", "stream_options"})


def encode_request(history: Sequence[Message], plan: ReplayPlan, *, model: str,
                   tools: Sequence[ToolSpec] = (), params: Mapping[str, Any] | None = None,
                   stream: bool = False, stream_usage: bool | None = None,
                   cache: Any = None) -> dict[str, Any]:
    """The request body for ``history`` on a route, shaped by ``plan``. Never mutates history.

    The returned body shares (read-only) native values: serialize it, do not edit it. With a
    ``cache`` (``WireCache()``) it is the body the core's wire cache sends, read back.
    """
    if cache is not None:
        return cached_body(cache, API, history, plan, RequestSpec(
            model=model, tools=tools, params=params or {}, stream=stream))
    messages = [wire for message in history for wire in encode_message(message, plan)]
    return request_body(messages, plan, model=model, tools=tools, params=params, stream=stream,
                        stream_usage=stream_usage)


def request_body(messages: list[Any], plan: ReplayPlan, *, model: str,
                 tools: Sequence[ToolSpec] = (), params: Mapping[str, Any] | None = None,
                 stream: bool = False, stream_usage: bool | None = None) -> dict[str, Any]:
    """The body around the wire ``messages`` (dicts, or the turns' bytes as fragments)."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = encode_tools(tools)
    profile = profile_of(plan, ChatProfile)
    if stream:
        body["stream"] = True
        if profile.stream_usage if stream_usage is None else stream_usage:
            body["stream_options"] = {"include_usage": True}
    if profile.body_extras:
        deep_merge(body, profile.body_extras)
    if params:
        merge_params(body, params, OWNED)
    for name in profile.drop_params:
        body.pop(name, None)
    return body


WIRE_VERSION = TURNS.version


def body_extras(body: Mapping[str, Any]) -> list[str]:
    """The non-standard top-level fields of a body (keep-thinking flags and the like)."""
    return sorted(k for k in body if k not in _STANDARD_BODY_KEYS)


def wire_summary(body: Mapping[str, Any], cache: Any = None) -> dict[str, Any]:
    """Which reasoning fields went on the wire, on how many assistant turns (for the log).

    With the ``cache`` that built the body (``encode_request``), the counts kept while encoding
    are read instead of walking every message again.
    """
    index = cached_index(cache, body)
    if isinstance(index, ChatIndex):
        return index.summary()
    return counted([counts_of(body.get("messages", ()))], body_extras(body))


_STANDARD_BODY_KEYS = frozenset({"model", "messages", "tools", "stream", "stream_options",
                                 "tool_choice", "temperature", "max_tokens", "top_p"})
