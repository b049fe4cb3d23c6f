"""Encode a history for one Bedrock model under a replay plan: the Converse request body.

Owns the Converse request shape (API_runtime_Converse.html#API_runtime_Converse_RequestSyntax):
``system`` blocks, alternating ``user``/``assistant`` messages (tool results travel in user
messages; consecutive same-role turns are merged), ``toolConfig``, ``inferenceConfig`` and the
model-specific ``additionalModelRequestFields`` (Claude thinking, reasoning effort). Converse needs
the conversation to start and end with a user message and rejects empty text blocks
(provider-contracts §7); an assistant turn holding only reasoning is rejected as prefill
(provider-updates §1c), so such a turn loses its reasoning and, left empty, is dropped. The tool
calls of a turn cut off mid-stream are left out: none was run, so none has a ``toolResult``, and
Converse rejects a ``toolUse`` without one ("Expected toolResult blocks at messages.N.content").

Each stored turn's wire form is derived once per (plan, inside-the-loop) and reused
(``WireCache``); request bodies share those read-only blocks.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

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
    USER_FIRST,
    USER_LAST,
)
from thoughtline.messages import Message, Opaque, Reasoning, Text, ToolCall, ToolResult, ToolSpec
from thoughtline.replay import ReplayPlan, loop_start

#: One turn on the wire: its Converse role, its blocks, and the fingerprint of each opaque block.
Blocks = tuple[str, tuple[dict[str, Any], ...], tuple[str, ...]]


@dataclass(frozen=True, kw_only=True, slots=True)
class Sent:
    """Where an opaque value went: ``messages[message].content[block]``, and its fingerprint."""

    message: int
    block: int
    fingerprint: str


class WireCache:
    """Each stored turn's blocks per (plan, inside-the-loop), derived once (turns are immutable),
    and per plan the assembled messages of the turns before the last request's tool loop.

    Turns are keyed by object identity (the cache holds each message so its identity stays
    valid). A turn before the loop keeps its wire form for every later request (the loop only
    moves forward), so a history that only grew reuses that prefix and assembles just the rest.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[Any, bool], dict[int, tuple[Message, Blocks]]] = {}
        self._marks: dict[Any, _Mark] = {}
        #: A resumed history's turns before the loop, spliced from their stored forms
        #: (``forms``): (plan key, id of the stored history) -> (it, how many, the assembly).
        self.spliced: dict[Any, tuple[Any, int, Any]] = {}

    def __len__(self) -> int:
        return sum(len(turns) for turns in self._entries.values())

    def turns(self, plan: ReplayPlan, in_loop: bool) -> dict[int, tuple[Message, Blocks]]:
        return self._entries.setdefault((plan.key, in_loop), {})

    def mark(self, plan: ReplayPlan) -> _Mark | None:
        return self._marks.get(plan.key)

    def remember(self, plan: ReplayPlan, mark: _Mark) -> None:
        self._marks[plan.key] = mark


def blocks_of(message: Message, plan: ReplayPlan, in_loop: bool,
               memo: dict[int, tuple[Message, Blocks]] | None) -> Blocks:
    if memo is None:
        return turn_blocks(message, plan, in_loop=in_loop)
    hit = memo.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    blocks = turn_blocks(message, plan, in_loop=in_loop)
    memo[id(message)] = (message, blocks)
    return blocks


# --- one turn -----------------------------------------------------------------------------------


def _reasoning_block(send: Send) -> dict[str, Any]:
    if send.form == "signed":
        # A signature-only block needs ``text: ""`` beside the signature ("reasoning content
        # format incorrect. Either 'text' or 'redactedContent' must be set.", PC §7).
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


# --- the request --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class _Mark:
    """The assembly after the turns before a request's tool loop (see ``WireCache``)."""

    turns: tuple[Message, ...]
    system: tuple[dict[str, Any], ...]
    out: tuple[dict[str, Any], ...]
    sent: tuple[Sent, ...]
    last_len: int  # how many blocks the last message had at the mark (it may grow after)


class Assembly:
    """Converse messages being put together: same-role turns merged, opaque positions noted.
    ``sizes`` counts each message's blocks (a spliced stored form stands for several)."""

    __slots__ = ("out", "sent", "sizes", "system")

    def __init__(self, mark: _Mark | None = None) -> None:
        self.system = list(mark.system) if mark else []
        self.out = list(mark.out) if mark else []
        self.sent = list(mark.sent) if mark else []
        self.sizes = [len(m["content"]) for m in self.out]
        if mark is not None and self.out:  # the last message may grow: never edit a shared one
            last = self.out[-1]
            self.out[-1] = {"role": last["role"], "content": last["content"][:mark.last_len]}
            self.sizes[-1] = mark.last_len

    def open(self, role: str) -> list[Any]:
        """The content of the message the next ``role`` turn goes into (a new one if needed)."""
        out = self.out
        if not out or out[-1]["role"] != role:
            if not out and role == "assistant":
                out.append({"role": "user", "content": [{TEXT: USER_FIRST}]})
                self.sizes.append(1)
            out.append({"role": role, "content": []})
            self.sizes.append(0)
        return out[-1]["content"]

    def add(self, blocks: Blocks) -> None:
        role, content_blocks, fps = blocks
        if role == "system":
            self.system.extend(content_blocks)
            return
        if not content_blocks:
            return
        content = self.open(role)
        for block, fp in zip(content_blocks, fps, strict=True):
            if fp:
                self.sent.append(Sent(message=len(self.out) - 1, block=self.sizes[-1],
                                      fingerprint=fp))
            content.append(block)
            self.sizes[-1] += 1

    def mark(self, turns: Sequence[Message]) -> _Mark:
        return _Mark(turns=tuple(turns), system=tuple(self.system), out=tuple(self.out),
                     sent=tuple(self.sent),
                     last_len=len(self.out[-1]["content"]) if self.out else 0)


def _reusable(mark: _Mark | None, view: Sequence[Message], start: int) -> bool:
    if mark is None or len(mark.turns) > start:
        return False
    # Equal turns have equal wire forms: a turn re-made with the same content still matches.
    return all(a is b or a == b for a, b in zip(mark.turns, view, strict=False))


def messages_of(history: Sequence[Message], plan: ReplayPlan,
                cache: WireCache | None = None) -> tuple[list[dict[str, Any]],
                                                         list[dict[str, Any]], list[Sent]]:
    """(system blocks, Converse messages, where each opaque value went).

    ``history`` is the turn engine's view (``replay.answered``: every tool call answered), as
    Converse requires; it is not walked a second time here.
    """
    view = history
    start = loop_start(view)
    mark = cache.mark(plan) if cache is not None else None
    if not _reusable(mark, view, start):
        mark = None
    assembly = Assembly(mark)
    prior = cache.turns(plan, False) if cache is not None else None
    looped = cache.turns(plan, True) if cache is not None else None
    for index in range(len(mark.turns) if mark else 0, len(view)):
        if index == start and cache is not None:
            cache.remember(plan, assembly.mark(view[:start]))
        in_loop = index >= start
        assembly.add(blocks_of(view[index], plan, in_loop, looped if in_loop else prior))
    if start == len(view) and cache is not None:
        cache.remember(plan, assembly.mark(view))
    out = assembly.out
    if out and out[-1]["role"] == "assistant":
        out.append({"role": "user", "content": [{TEXT: USER_LAST}]})
    return assembly.system, out, assembly.sent


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
        # Manual thinking runs at temperature 1 only (PC §7): sampling settings are left out.
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


def encode_request(history: Sequence[Message], plan: ReplayPlan, *,
                   tools: Sequence[ToolSpec] = (), params: Mapping[str, Any] | None = None,
                   cache: WireCache | None = None) -> tuple[dict[str, Any], list[Sent]]:
    """The Converse body for ``history`` and where its opaque values sit (for ``classify``)."""
    system, messages, sent = messages_of(history, plan, cache)
    return request_body(system, messages, plan, tools=tools, params=params), sent


#: The body fields request_body writes. No param is merged raw into a Converse body (the
#: neutral ones are read into ``inferenceConfig``, ``additional_fields`` goes under
#: ``additionalModelRequestFields`` with the thinking fields written over it): listed so a
#: param naming one is reported as left out.
OWNED = frozenset({"messages", "system", "inferenceConfig", "toolConfig",
                   "additionalModelRequestFields"})


def request_body(system: Sequence[Any], messages: list[dict[str, Any]], plan: ReplayPlan, *,
                 tools: Sequence[ToolSpec] = (),
                 params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The Converse body around ``system`` blocks and ``messages``."""
    if not messages:
        messages = [{"role": "user", "content": [{TEXT: USER_LAST}]}]
    body: dict[str, Any] = {"messages": messages}
    if system:
        body["system"] = list(system)
    inference, extra = request_fields(plan.profile, params or {}, tools=bool(tools))
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
        if not isinstance(reasoning, Mapping):
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


def wire_summary(body: Mapping[str, Any]) -> dict[str, Any]:
    """Which reasoning went on the wire, on how many assistant turns (for the request log)."""
    counts: dict[str, int] = {}
    turns = 0
    for message in body.get("messages", ()):
        if message.get("role") != "assistant":
            continue
        turns += 1
        for key, count in block_carriers(message.get("content", ())).items():
            counts[key] = counts.get(key, 0) + count
    return summary_of(turns, counts, body.get("additionalModelRequestFields", {}))
