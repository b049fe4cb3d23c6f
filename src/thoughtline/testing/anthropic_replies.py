"""What the emulated Claude says, and how the Messages API puts it on the wire, whole and streamed.

Owns the script (deterministic from the request: tools offered and the last turn is the user's →
thinking and one call to the first tool; the last turn holds tool results → an empty-text signed
thinking block, a redacted block and a final answer; otherwise → thinking and an answer; models
that bind blocks think with empty text, their default display: preserved-thinking page) and the
shapes: the whole ``message`` object, and the SSE events with their real ``event:`` names —
``message_start`` (carrying ``input_transformations``), empty block shells, ``thinking_delta``
pieces, one ``signature_delta`` just before ``content_block_stop``, ``text_delta``,
``input_json_delta``, ``message_delta``, ``message_stop`` and ``ping`` (the recorded streams in
tests/fixtures/anthropic). Does not own what is refused (``anthropic_blocks``/``anthropic_rules``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.testing import anthropic_rules as rules
from thoughtline.testing.anthropic_blocks import BlockSigner, Prefix
from thoughtline.testing.anthropic_fallback import Hop
from thoughtline.testing.toolargs import arguments


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    content: list[dict[str, Any]]
    stop_reason: str
    message_id: str


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content
                       if isinstance(b, Mapping) and isinstance(b.get("text"), str))
    return ""


def _last(messages: Sequence[Any]) -> tuple[str, list[Any]]:
    last = messages[-1] if messages and isinstance(messages[-1], Mapping) else {}
    content = last.get("content")
    blocks = content if isinstance(content, list) else []
    return _text_of(content), [b for b in blocks if isinstance(b, Mapping)
                               and b.get("type") == "tool_result"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Said:
    """One block the emulated model says: thinking (maybe redacted), text or a tool call."""

    kind: str  # "thinking" | "redacted" | "text" | "tool_use"
    text: str = ""
    call: Mapping[str, Any] | None = None


def plan(body: Mapping[str, Any], model: str) -> tuple[list[Said], str]:
    """The blocks to say, in order, and the stop reason."""
    messages = body.get("messages") or []
    text, results = _last(messages)
    digest = hashlib.sha256(orjson.dumps(messages, option=orjson.OPT_SORT_KEYS)).hexdigest()
    quiet = rules.binds(model)
    thought = "" if quiet else f"Considering the request ({digest[:8]}): {text[:40]!r}."
    tools = [t for t in body.get("tools") or () if isinstance(t, Mapping) and t.get("name")]
    if results:
        said = _text_of(results[0].get("content")) or str(results[0].get("content", ""))
        return [Said(kind="thinking"), Said(kind="redacted"),
                Said(kind="text", text=f"The tool said: {said[:60]}")], "end_turn"
    if tools and text:
        n = int(digest[:2], 16)
        call = {"id": f"toolu_{digest[:24]}", "name": tools[0]["name"],
                "input": arguments(tools[0].get("input_schema"), text[:40], number=n,
                                   fallback={"query": text[:40], "n": n})}
        return [Said(kind="thinking", text=thought), Said(kind="tool_use", call=call)], (
            "tool_use")
    return [Said(kind="thinking", text=thought),
            Said(kind="text", text=f"Answer {digest[:6]} to: {text[:40]}")], "end_turn"


def build(body: Mapping[str, Any], model: str, account: str, signer: BlockSigner,
          previous: str, hop: Hop | None = None) -> Reply:
    """The reply's content blocks, each thinking block signed over its prefix. With a ``hop``
    (server-side fallback, ``anthropic_fallback``): the requested model's thinking, the
    ``fallback`` block, then the fallback model's answer, its thinking rooted anew."""
    content: list[dict[str, Any]] = []
    if hop is not None:
        declined = [Said(kind="thinking", text="" if rules.binds(model) else
                         "This falls under a policy I must decline.")]
        _say(body, declined, model, account, signer, previous, content)
        content.append(hop.block())
        model, previous = hop.to, ""
    planned, stop = plan(body, model)
    _say(body, planned, model, account, signer, previous, content)
    digest = hashlib.sha256(orjson.dumps(content)).hexdigest()
    return Reply(content=content, stop_reason=stop, message_id=f"msg_emu{digest[:20]}")


def _say(body: Mapping[str, Any], planned: Sequence[Said], model: str, account: str,
         signer: BlockSigner, previous: str, content: list[dict[str, Any]]) -> None:
    """Append the planned blocks to ``content``, signing each thinking block over its prefix
    and its predecessor (``previous``: where a binding model's chain starts)."""
    messages = list(body.get("messages") or [])
    last = previous if rules.binds(model) else ""
    for said in planned:
        if said.kind in ("thinking", "redacted"):
            prefix = Prefix.of(body, messages, len(messages), content, len(content))
            value = signer.issue(model=model, account=account, text=said.text, prefix=prefix,
                                 previous=last, redacted=said.kind == "redacted")
            last = value
            content.append({"type": "thinking", "thinking": said.text, "signature": value}
                           if said.kind == "thinking" else {"type": "redacted_thinking",
                                                            "data": value})
        elif said.call is not None:
            content.append({"type": "tool_use", **said.call})
        else:
            content.append({"type": "text", "text": said.text})


def prompt_usage(raw: bytes, body: Mapping[str, Any], *, cached: bool) -> dict[str, int]:
    """The input token counts of a request (bytes / 4). ``cached``: answer as a prompt-cached
    request does, everything before the last message read from the cache. ``input_tokens``
    then counts only the uncached rest (docs.anthropic.com prompt-caching: it excludes
    ``cache_read_input_tokens`` and ``cache_creation_input_tokens``; the prompt is the sum)."""
    total = max(1, len(raw) // 4)
    messages = body.get("messages")
    if not cached or not isinstance(messages, list) or not messages:
        return {"input_tokens": total}
    last = max(1, len(orjson.dumps(messages[-1])) // 4)
    return {"input_tokens": min(last, total), "cache_read_input_tokens": max(0, total - last),
            "cache_creation_input_tokens": 0}


def _usage(prompt: Mapping[str, int], reply: Reply) -> dict[str, int]:
    return {**prompt, "output_tokens": max(1, len(orjson.dumps(reply.content)) // 4)}


def whole(reply: Reply, model: str, prompt: Mapping[str, int],
          reports: Sequence[Mapping[str, str]] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": reply.message_id, "type": "message", "role": "assistant",
                           "model": model, "content": reply.content,
                           "stop_reason": reply.stop_reason, "stop_sequence": None,
                           "usage": _usage(prompt, reply)}
    if reports is not None:
        out["input_transformations"] = list(reports)
    return out


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def _block_events(index: int, block: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    kind = block["type"]
    deltas: list[dict[str, Any]] = []
    shell: dict[str, Any] = dict(block)
    if kind == "thinking":
        shell = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], 9)]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "text":
        shell = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], 11)]
    elif kind == "tool_use":
        shell = {**block, "input": {}}
        spaced = json.dumps(block["input"])  # the API spaces its JSON; fragments split anywhere
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(spaced, 5)]
    yield "content_block_start", {"type": "content_block_start", "index": index,
                                  "content_block": shell}
    if index == 0:
        yield "ping", {"type": "ping"}
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                      "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def events(reply: Reply, model: str, prompt: Mapping[str, int],
           reports: Sequence[Mapping[str, str]] | None) -> Iterator[tuple[str, Any]]:
    """The SSE events for ``reply`` (``input_transformations`` on ``message_start``)."""
    usage = _usage(prompt, reply)
    message: dict[str, Any] = {"id": reply.message_id, "type": "message", "role": "assistant",
                               "model": model, "content": [], "stop_reason": None,
                               "stop_sequence": None,
                               "usage": {**prompt, "output_tokens": 1}}
    if reports is not None:
        message["input_transformations"] = list(reports)
    yield "message_start", {"type": "message_start", "message": message}
    for index, block in enumerate(reply.content):
        yield from _block_events(index, block)
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                            "usage": {"output_tokens": usage["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}
