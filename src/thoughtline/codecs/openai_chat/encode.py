"""Encode a request for a route: exactly the plan's carriers, the pad, native values on their own
route, keep-thinking body fields — and nothing of ours on the wire.

Each stored turn's wire form is derived once per plan (``WireCache``) and a growing history reuses
the wire list of the prefix it already built, so a request costs little more than serializing it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from thoughtline.codecs import splice
from thoughtline.codecs.common import deep_merge, merge_params
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
from thoughtline.codecs.splice import SplicingCache
from thoughtline.messages import Message, Reasoning, ToolCall, ToolResult, ToolSpec
from thoughtline.replay import ReplayPlan


def _encode_call(call: ToolCall, plan: ReplayPlan, *, own: bool,
                 dummy_signature: bool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
    wire: dict[str, Any] = {"id": call.id, "type": "function", "function": function}
    native = plan.profile.native
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
    text = message.text
    wire: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    own = plan.produced_here(message.origin)
    if calls:
        # Gemini 3 wants the first call of a step signed; a foreign turn gets the documented dummy.
        unsigned = not own or (NS_GOOGLE not in message.native
                               and not any(NS_GOOGLE in c.native for c in calls))
        wire["tool_calls"] = [_encode_call(c, plan, own=own, dummy_signature=unsigned and i == 0)
                              for i, c in enumerate(calls)]
    profile = plan.profile
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
                     and plan.produced_here(p.origin)]
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
        return [_encode_assistant(message, plan)]
    if message.role == "tool":
        return [{"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                for r in message.parts if isinstance(r, ToolResult)]
    return [{"role": message.role, "content": message.text}]


class Tally(splice.Tally):
    """Running counts of reasoning fields on assistant wire messages (the request log's view)."""

    __slots__ = ()

    def add(self, message: Mapping[str, Any]) -> None:
        if message.get("role") != "assistant":
            return
        self.assistant += 1
        carriers, native = self.carriers, self.native
        for key in (RC, R, RD):
            if key in message:
                carriers[key] = carriers.get(key, 0) + 1
        if message.get(RC) == PAD:
            self.pads += 1
        for key in ("reasoning_opaque", "reasoning_text", "extra_content", "thinking",
                    "thinking_signature"):
            if key in message:
                native[key] = native.get(key, 0) + 1
        for call in message.get("tool_calls") or ():
            if "extra_content" in call:
                native["tool_calls.extra_content"] = native.get("tool_calls.extra_content", 0) + 1
            if "thought_signature" in call.get("function", {}):
                native["function.thought_signature"] = (
                    native.get("function.thought_signature", 0) + 1)


class WireCache(SplicingCache):
    """Each stored turn's wire messages per plan (see ``codecs.splice``)."""

    api = API
    # Bump when encode_message's output for a stored turn changes (chat-2: form digests cover
    # the meta too; rows under chat-1 are simply not found, and re-encoded once).
    version = "chat-2"
    tally = Tally
    encode_message = staticmethod(encode_message)

    def messages(self, history: Sequence[Message], plan: ReplayPlan) -> list[Any]:
        """The wire messages of ``history``; a resumed one is spliced from its stored bytes."""
        return self.items(history, plan)


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
                   cache: WireCache | None = None) -> dict[str, Any]:
    """The request body for ``history`` on a route, shaped by ``plan``. Never mutates history.

    The returned body shares (read-only) native values and cached wire turns: serialize it, do not
    edit it.
    """
    if cache is not None:
        messages = cache.messages(history, plan)
    else:
        messages = [wire for message in history for wire in encode_message(message, plan)]
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = encode_tools(tools)
    if stream:
        body["stream"] = True
        if plan.profile.stream_usage if stream_usage is None else stream_usage:
            body["stream_options"] = {"include_usage": True}
    profile = plan.profile
    if profile.body_extras:
        deep_merge(body, profile.body_extras)
    if params:
        merge_params(body, params, OWNED)
    for name in profile.drop_params:
        body.pop(name, None)
    return body


WIRE_VERSION = WireCache.version


def tally_summary(tally: Tally, body_extras: Sequence[str]) -> dict[str, Any]:
    tally.settle()
    return {"assistant_turns": tally.assistant, "carriers": dict(tally.carriers),
            "pads": tally.pads, "native": dict(tally.native), "body_extras": list(body_extras)}


def body_extras(body: Mapping[str, Any]) -> list[str]:
    """The non-standard top-level fields of a body (keep-thinking flags and the like)."""
    return sorted(k for k in body if k not in _STANDARD_BODY_KEYS)


def wire_summary(body: Mapping[str, Any], cache: WireCache | None = None) -> dict[str, Any]:
    """Which reasoning fields went on the wire, on how many assistant turns (for the log).

    With the ``cache`` that built the body, the counts it kept while encoding are reused instead
    of walking every message again.
    """
    messages = body.get("messages", ())
    tally = cache.tally_of(messages) if cache is not None else None
    if tally is None:
        tally = Tally()
        for message in messages:
            tally.add(message)
    return tally_summary(tally, body_extras(body))


_STANDARD_BODY_KEYS = frozenset({"model", "messages", "tools", "stream", "stream_options",
                                 "tool_choice", "temperature", "max_tokens", "top_p"})
