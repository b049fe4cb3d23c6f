"""Deterministic synthetic sessions and streams, shaped like the recorded fixtures.

Owns the workload every scenario runs on, so that all scenarios (and the peer) see the same bytes:

* ``history(n)`` — a canonical history of ``n`` assistant turns. Each turn is an assistant message
  (~2 KB of readable reasoning, one OpenRouter ``reasoning_details`` item kept verbatim under
  ``native`` — alternately a ~400-byte encrypted blob and a ~400-byte signature over the text —
  and one tool call), a tool message with a ~500-byte result, and the next user message.
* ``openai_messages(n)`` — the same history as OpenAI-format dicts with Anthropic-style
  ``thinking_blocks`` (the input LiteLLM's Anthropic transformation expects).
* ``stream_chunks(shape, count)`` — ``chat.completion.chunk`` JSON strings: reasoning deltas, then
  content deltas, then tool-call argument deltas, as DeepSeek and OpenRouter send them.

Everything is seeded: the same arguments always give the same values. No timing here.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import orjson

from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolSpec,
    system,
    user,
)

SEED = 20250101
REASONING_BYTES = 2048
OPAQUE_BYTES = 400
RESULT_BYTES = 500

ORIGIN = Origin(api="openai-chat", provider="openrouter", host="openrouter.ai",
                model="anthropic/claude-sonnet-4.5")
TOOL = ToolSpec(name="search_docs", description="Search the project documentation.",
                parameters={"type": "object", "properties": {"query": {"type": "string"},
                                                             "limit": {"type": "integer"}},
                            "required": ["query"]})

_WORDS = (
    "the", "user", "wants", "a", "careful", "answer", "so", "I", "should", "check", "the", "tool",
    "output", "first", "and", "then", "compare", "it", "with", "what", "the", "documentation",
    "says", "about", "reasoning", "carriers", "signatures", "routes", "replay", "must", "echo",
    "placeholder", "strict", "provider", "field", "history", "turn", "loop", "resume", "branch",
    "compaction", "because", "cache", "wire", "body", "bytes", "encoder", "serialization",
    "stream", "chunk", "delta", "fold", "decode", "step", "maybe", "however", "therefore", "next",
    "consider", "verify", "again", "result", "query", "limit", "index", "argument",
)


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        chunk = rng.choices(_WORDS, k=64)
        words.extend(chunk)
        length += sum(len(w) + 1 for w in chunk)
    return " ".join(words)[:size]


def _opaque(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size * 3 // 4)).decode("ascii")[:size]


def _turn(rng: random.Random, index: int) -> tuple[Message, Message, Message]:
    thought = _text(rng, REASONING_BYTES)
    if index % 2 == 0:
        item: dict[str, Any] = {"type": "reasoning.encrypted", "data": _opaque(rng, OPAQUE_BYTES),
                                "id": f"rs_{index:06d}", "format": "openai-responses-v1",
                                "index": 0}
        opaque = Reasoning(kind="encrypted", data=item["data"], origin=ORIGIN,
                           native={"openrouter": item})
    else:
        item = {"type": "reasoning.text", "text": thought,
                "signature": _opaque(rng, OPAQUE_BYTES), "format": "anthropic-claude-v1",
                "index": 0}
        opaque = Reasoning(kind="signed", text=thought, signature=item["signature"],
                           origin=ORIGIN, native={"openrouter": item})
    call_id = f"call_{index:06d}_{rng.getrandbits(40):010x}"
    arguments = orjson.dumps({"query": _text(rng, 40), "limit": 5}).decode()
    assistant = Message(
        role="assistant",
        parts=(Reasoning(kind="text", text=thought, origin=ORIGIN), opaque,
               ToolCall(id=call_id, name=TOOL.name, arguments=arguments)),
        origin=ORIGIN,
    )
    result = Message(role="tool", parts=(ToolResult(call_id=call_id,
                                                    content=_text(rng, RESULT_BYTES)),))
    follow_up = user(f"Thanks. Step {index + 1}: " + _text(rng, 80))
    return assistant, result, follow_up


@cache
def _all_turns(n: int) -> tuple[Message, ...]:
    rng = random.Random(SEED)
    messages: list[Message] = [system("You are a careful research assistant."),
                               user("Find what the docs say about replaying reasoning.")]
    for index in range(n):
        messages.extend(_turn(rng, index))
    return tuple(messages)


def history(n: int, *, pool: int | None = None) -> tuple[Message, ...]:
    """The first ``n`` turns (2 + 3n messages). ``pool`` shares one generated prefix-stable set."""
    return _all_turns(max(n, pool or 0))[: 2 + 3 * n]


def history_size(n: int) -> int:
    return 2 + 3 * n


def model_config(provider: Mapping[str, Any]) -> dict[str, Any]:
    """A stored session's model config (as ``Session.create`` writes it) for ``provider``."""
    return {"provider": dict(provider), "params": {}, "verdicts": [], "fingerprints": [],
            "tools": [{"name": TOOL.name, "description": TOOL.description,
                       "parameters": dict(TOOL.parameters)}]}


# --- the same history, OpenAI-format (for LiteLLM) ------------------------------------------------


def openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """OpenAI-format messages with ``thinking_blocks`` — what LiteLLM converts to Anthropic."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            for part in message.reasoning:
                if part.kind == "signed":
                    blocks.append({"type": "thinking", "thinking": part.text,
                                   "signature": part.signature})
                elif part.kind == "encrypted":
                    blocks.append({"type": "redacted_thinking", "data": part.data})
            out.append({
                "role": "assistant", "content": message.text or None,
                "reasoning_content": message.reasoning_text(),
                "thinking_blocks": blocks,
                "tool_calls": [{"id": c.id, "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments}}
                               for c in message.tool_calls],
            })
        elif message.role == "tool":
            out.extend({"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                       for r in message.tool_results)
        else:
            out.append({"role": message.role, "content": message.text})
    return out


def openai_tools() -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": TOOL.name, "description": TOOL.description,
                                              "parameters": dict(TOOL.parameters)}}]


# --- streams ------------------------------------------------------------------------------------

STREAM_SHAPES = ("deepseek", "openrouter", "tool-call")
#: Share of reasoning / content chunks per shape; the rest are tool-call argument fragments.
_MIX = {"deepseek": (0.6, 0.3), "openrouter": (0.6, 0.3), "tool-call": (0.02, 0.0)}
_ARG_PIECE = 40  # bytes of arguments per fragment in the tool-call shape (a long file write)


def _pieces(rng: random.Random, count: int) -> list[str]:
    return [rng.choice(_WORDS) + rng.choice(("", " ", ", ", ". ")) for _ in range(count)]


def stream_chunks(shape: str, count: int = 10_000) -> list[bytes]:
    """``count`` chunk JSON texts: reasoning deltas, content deltas, then tool-call arguments.

    ``deepseek`` and ``openrouter``: 60% reasoning, 30% content, 10% argument fragments.
    ``tool-call`` (DeepSeek-shaped): a little reasoning, then one long argument (~40 bytes per
    fragment, ~400 KB for 10,000 chunks) — a model writing a file through a tool.
    """
    if shape not in STREAM_SHAPES:
        raise ValueError(f"unknown stream shape {shape!r}")
    rng = random.Random(SEED + count)
    reason_share, content_share = _MIX[shape]
    n_reason = max(1, int(count * reason_share))
    n_content = int(count * content_share)
    n_args = count - n_reason - n_content - 2  # minus the tool-call start and the finish chunk
    wire = "openrouter" if shape == "openrouter" else "deepseek"
    deltas: list[dict[str, Any]] = []
    for i, piece in enumerate(_pieces(rng, n_reason)):
        deltas.append(_reasoning_delta(wire, piece, first=i == 0))
    if wire == "openrouter":
        deltas[-1]["reasoning_details"].append(
            {"type": "reasoning.text", "signature": _opaque(rng, OPAQUE_BYTES),
             "format": "anthropic-claude-v1", "index": 0})
    for piece in _pieces(rng, n_content):
        deltas.append(_content_delta(wire, piece))
    deltas.append({"content": None, "tool_calls": [
        {"index": 0, "id": "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "type": "function",
         "function": {"name": TOOL.name, "arguments": ""}}]})
    size = n_args * (_ARG_PIECE if shape == "tool-call" else 3)
    args = orjson.dumps({"query": _text(rng, size)}).decode()
    step = max(1, -(-len(args) // n_args))
    for start in range(0, step * n_args, step):
        deltas.append({"content": None, "tool_calls": [
            {"index": 0, "function": {"arguments": args[start:start + step]}}]})
    return [_frame(wire, delta, None) for delta in deltas] + [_finish(wire)]


def _reasoning_delta(shape: str, piece: str, *, first: bool) -> dict[str, Any]:
    if shape == "deepseek":
        delta: dict[str, Any] = {"content": None, "reasoning_content": piece}
    else:
        delta = {"content": "", "reasoning": piece, "reasoning_details": [
            {"type": "reasoning.text", "text": piece, "format": "anthropic-claude-v1",
             "index": 0}]}
    if first:
        delta = {"role": "assistant", **delta}
    return delta


def _content_delta(shape: str, piece: str) -> dict[str, Any]:
    if shape == "deepseek":
        return {"content": piece, "reasoning_content": None}
    return {"content": piece, "role": "assistant"}


_USAGE = {"prompt_tokens": 1200, "completion_tokens": 9000, "total_tokens": 10200,
          "completion_tokens_details": {"reasoning_tokens": 6000}}


def _frame(shape: str, delta: dict[str, Any], finish: str | None) -> bytes:
    if shape == "deepseek":
        return orjson.dumps({
            "id": "33be18fc-3842-486c-8c29-dd8e578f7f20", "object": "chat.completion.chunk",
            "created": 1752169304, "model": "deepseek-reasoner",
            "system_fingerprint": "fp_393bca965e_prod0623_fp8_kvcache",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            "usage": _USAGE if finish else None})
    chunk: dict[str, Any] = {
        "id": "gen-1777319950-BX6MCZRmFqpAw5lUPuhg", "object": "chat.completion.chunk",
        "created": 1777319950, "model": "anthropic/claude-4.5-haiku-20251001",
        "provider": "Amazon Bedrock",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                     "native_finish_reason": finish}]}
    if finish:
        chunk["usage"] = _USAGE
    return orjson.dumps(chunk)


def _finish(shape: str) -> bytes:
    delta: dict[str, Any] = {"content": "", "reasoning_content": None} if shape == "deepseek" \
        else {"content": "", "role": "assistant"}
    return _frame(shape, delta, "tool_calls")
