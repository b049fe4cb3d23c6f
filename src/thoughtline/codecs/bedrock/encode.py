"""Encode a history for one Bedrock model under a replay plan: the Converse request body.

Owns the Converse request shape (API_runtime_Converse.html#API_runtime_Converse_RequestSyntax):
``system`` blocks, alternating ``user``/``assistant`` messages (tool results travel in user
messages; consecutive same-role turns are merged), ``toolConfig``, ``inferenceConfig`` and the
model-specific ``additionalModelRequestFields`` (Claude thinking, reasoning effort). Converse needs
the conversation to start and end with a user message and rejects empty text blocks
(Converse API reference, docs.aws.amazon.com/bedrock); an assistant turn holding only
reasoning is rejected as prefill (NousResearch/hermes-agent#105780), so such a turn loses its
reasoning and, left empty, is dropped. The tool calls of a turn cut off mid-stream are left out:
none was run, so none has a ``toolResult``, and Converse rejects a ``toolUse`` without one
("Expected toolResult blocks at messages.N.content").

Each function here encodes one turn, or the body around the turns; ``turns`` walks a history with
them, merging same-role turns (the core's wire cache stores each turn's blocks under the context
they depend on: inside the current tool loop or not).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from thoughtline.codecs import foreign
from thoughtline.codecs.base import profile_of
from thoughtline.codecs.bedrock.policy import Send, decide
from thoughtline.codecs.bedrock.profile import BedrockProfile
from thoughtline.codecs.bedrock.wire import (
    CARRIERS,
    EMPTY_RESULT,
    NS,
    REASONING,
    REASONING_TEXT,
    REDACTED,
    SIGNATURE,
    TEXT,
    TOOL_RESULT,
    TOOL_USE,
    USER_LAST,
)
from thoughtline.messages import Message, Opaque, Reasoning, Text, ToolCall, ToolResult, ToolSpec
from thoughtline.replay import ReplayPlan

#: One turn on the wire: its Converse role, its blocks, and the fingerprint of each opaque block.
Blocks = tuple[str, tuple[dict[str, Any], ...], tuple[str, ...]]


# --- one turn -----------------------------------------------------------------------------------


def _reasoning_block(send: Send) -> dict[str, Any]:
    if send.form == "signed":
        # A signature-only block needs ``text: ""`` beside the signature ("reasoning content
        # format incorrect. Either 'text' or 'redactedContent' must be set.",
        # API_runtime_ReasoningContentBlock).
        return {REASONING: {REASONING_TEXT: {TEXT: send.text, SIGNATURE: send.value}}}
    if send.form == "text":
        return {REASONING: {REASONING_TEXT: {TEXT: send.text}}}
    if send.form == "redacted":  # Converse carries the Anthropic data string base64-encoded
        value = base64.b64encode(send.value.encode("ascii")).decode("ascii")
        return {REASONING: {REDACTED: value}}
    return {REASONING: {REDACTED: send.value}}


def _tool_use(call: ToolCall) -> dict[str, Any]:
    try:
        arguments = orjson.loads(call.arguments) if call.arguments else {}
    except orjson.JSONDecodeError:
        arguments = {}  # arguments cut off mid-stream: Converse needs an object
    if not isinstance(arguments, dict):
        arguments = {}
    return {TOOL_USE: {"toolUseId": call.id, "name": call.name, "input": arguments}}


def _tool_result(result: ToolResult) -> dict[str, Any]:
    return {TOOL_RESULT: {"toolUseId": result.call_id,
                          "content": [{TEXT: result.content or EMPTY_RESULT}],
                          "status": "error" if result.is_error else "success"}}


def _assistant(message: Message, plan: ReplayPlan, in_loop: bool) -> Blocks:
    message = foreign.shown(message, NS)  # another API's blocks as their readable text
    blocks: list[dict[str, Any]] = []
    fps: list[str] = []
    kept = 0  # blocks that are not reasoning
    for part in message.parts:
        if isinstance(part, Text):
            if part.text:
                blocks.append({TEXT: part.text})
                fps.append("")
                kept += 1
        elif isinstance(part, Reasoning):
            send = decide(part, message.origin, plan, in_loop=in_loop)
            if send is not None:
                blocks.append(_native_or(part, send))
                fps.append(send.fingerprint)
        elif isinstance(part, ToolCall):
            if message.incomplete:
                continue  # cut before the turn ended: never sent, so it has no toolResult
            blocks.append(_tool_use(part))
            fps.append("")
            kept += 1
        elif (isinstance(part, Opaque) and part.namespace == NS
              and plan.may_replay(part.origin or message.origin)):
            blocks.append(part.native[NS])
            fps.append("")
            kept += 1
    if not kept:
        return ("assistant", (), ())
    return ("assistant", tuple(blocks), tuple(fps))


def _native_or(part: Reasoning, send: Send) -> dict[str, Any]:
    """A block kept verbatim because its recorded bytes were not canonical base64 (decode)."""
    verbatim = part.native.get(NS)
    if send.form in ("redacted", "encrypted") and verbatim and REDACTED in verbatim:
        return {REASONING: verbatim}
    return _reasoning_block(send)


def turn_blocks(message: Message, plan: ReplayPlan, *, in_loop: bool) -> Blocks:
    """The Converse role and content blocks of one stored turn."""
    if message.role == "assistant":
        return _assistant(message, plan, in_loop)
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolResult):
            blocks.append(_tool_result(part))
        elif isinstance(part, Text) and part.text:
            blocks.append({TEXT: part.text})
    role = "system" if message.role == "system" else "user"
    return (role, tuple(blocks), ("",) * len(blocks))


# --- the request around the turns -------------------------------------------------------------


def _set_path(target: dict[str, Any], path: str, value: Any) -> None:
    *heads, last = path.split(".")
    for head in heads:
        target = target.setdefault(head, {})
    target[last] = value


def _effort(params: Mapping[str, Any]) -> Any:
    return params.get("reasoning_effort", params.get("effort"))


def request_fields(profile: BedrockProfile, params: Mapping[str, Any], *,
                   tools: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """(inferenceConfig, additionalModelRequestFields) for the model."""
    inference: dict[str, Any] = {}
    for name, wire in (("max_tokens", "maxTokens"), ("temperature", "temperature"),
                       ("top_p", "topP"), ("stop", "stopSequences")):
        if params.get(name) is not None:
            inference[wire] = params[name]
    extra: dict[str, Any] = dict(params.get("additional_fields") or {})
    effort = _effort(params)
    if profile.thinking == "adaptive":
        extra["thinking"] = {"type": "adaptive"}
    elif profile.thinking == "manual":
        budget = int(params.get("thinking_budget") or profile.manual_budget)
        if "maxTokens" in inference:
            budget = max(1024, min(budget, int(inference["maxTokens"]) - 1))
        extra["thinking"] = {"type": "enabled", "budget_tokens": budget}
        # Manual thinking runs at temperature 1 only
        # (docs.anthropic.com/en/docs/build-with-claude/extended-thinking): sampling settings are
        # left out.
        inference.pop("temperature", None)
        inference.pop("topP", None)
        if profile.interleaved and tools:
            extra["anthropic_beta"] = [profile.interleaved]
        effort = None  # effort belongs to adaptive thinking
    if effort is not None and profile.effort:
        _set_path(extra, profile.effort, effort)
    return inference, extra


def tool_config(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    specs = []
    for tool in tools:
        spec: dict[str, Any] = {"name": tool.name, "inputSchema": {"json": dict(tool.parameters)}}
        if tool.description:
            spec["description"] = tool.description
        specs.append({"toolSpec": spec})
    return {"tools": specs}


#: The body fields request_body writes. No param is merged raw into a Converse body (the
#: neutral ones are read into ``inferenceConfig``, ``additional_fields`` goes under
#: ``additionalModelRequestFields`` with the thinking fields written over it): listed so a
#: param naming one is reported as left out.
OWNED = frozenset({"messages", "system", "inferenceConfig", "toolConfig",
                   "additionalModelRequestFields"})


def request_body(system: Sequence[Any], messages: list[Any], plan: ReplayPlan, *,
                 tools: Sequence[ToolSpec] = (),
                 params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The Converse body around ``system`` blocks and ``messages``."""
    if not messages:
        messages = [{"role": "user", "content": [{TEXT: USER_LAST}]}]
    body: dict[str, Any] = {"messages": messages}
    if system:
        body["system"] = list(system)
    inference, extra = request_fields(profile_of(plan, BedrockProfile), params or {},
                                      tools=bool(tools))
    if inference:
        body["inferenceConfig"] = inference
    if tools:
        body["toolConfig"] = tool_config(tools)
    if extra:
        body["additionalModelRequestFields"] = extra
    return body


def block_carriers(blocks: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many of each reasoning carrier ``blocks`` hold (for the request log)."""
    counts: dict[str, int] = {}
    for block in blocks:
        reasoning = block.get(REASONING)
        if reasoning is None or not isinstance(reasoning, Mapping):  # (None: no abstract check)
            continue
        if REDACTED in reasoning:
            counts[REDACTED] = counts.get(REDACTED, 0) + 1
        item = reasoning.get(REASONING_TEXT)
        if isinstance(item, Mapping):
            counts[REASONING_TEXT] = counts.get(REASONING_TEXT, 0) + 1
            if SIGNATURE in item:
                counts[SIGNATURE] = counts.get(SIGNATURE, 0) + 1
    return counts


def summary_of(assistant_turns: int, counts: Mapping[str, int],
               extras: Iterable[str]) -> dict[str, Any]:
    return {"assistant_turns": assistant_turns,
            "carriers": {k: counts[k] for k in sorted(CARRIERS) if counts.get(k)},
            "body_extras": sorted(extras)}
