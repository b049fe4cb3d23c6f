"""What the Gemini emulator says, and how it puts it on the wire (whole, SSE, JSON array).

Script (deterministic, derived from the request): when tools are offered and the last content is
a user's text, the model calls a tool — the first two tools in parallel when the text asks for
"both" (only the first call signed); when the last content holds function responses, it answers
with text quoting them — unless the user's text asked for a "chain", another tool is offered and
this is the first step, then it calls the next tool (a sequential step signs its own first call);
otherwise it answers in text. Call arguments follow each tool's schema (``toolargs``).
With ``includeThoughts`` a thought summary part comes first.

Wire shapes follow the recordings (tests/fixtures/gemini, SOURCES.md):

- whole: thought part, then a text part carrying the signature, or the call parts
  (``fantasy-gemini3-pro-thinking-function-call.i*.response.json``);
- streamed text turn: the text in several chunks, then a last chunk whose only part is an empty
  text carrying the signature, with ``finishReason`` (``fantasy-gemini3-pro-thinking-function-call-
  stream.i1.response.sse.txt``);
- streamed call turn: one chunk per call (the first signed), then an empty text part with
  ``finishReason`` (``fantasy-gemini31-pro-parallel-calls-first-signature-only-stream.i0``);
- SSE events end in ``\\r\\n\\r\\n`` (``pydantic-ai-vertex-gemini3-flash-stream-text-signature``);
  without ``alt=sse`` the chunks are one JSON array (``llm-gemini-*.json-array-stream.txt``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.testing.gemini_rules import KIND, SIG, call_binding, text_binding
from thoughtline.testing.signing import Signer
from thoughtline.testing.toolargs import arguments

_SNIPPET = 40
_CHAIN = re.compile(r"\bchain\b", re.IGNORECASE)  # the word, not "blockchain"


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    name: str
    args: dict[str, Any]
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    thought: str | None
    text: str
    calls: tuple[Call, ...]
    digest: str


def _texts(content: Mapping[str, Any]) -> str:
    return "".join(p["text"] for p in content.get("parts", ())
                   if isinstance(p.get("text"), str) and p.get("thought") is not True)


def _responses(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p["functionResponse"] for p in content.get("parts", ()) if "functionResponse" in p]


def _tools(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [d for tool in body.get("tools") or () for d in tool.get("functionDeclarations") or ()]


def _args_for(declaration: Mapping[str, Any], prompt: str) -> dict[str, Any]:
    # ``parameters`` (Gemini's OpenAPI subset) or ``parametersJsonSchema`` (JSON Schema).
    schema = declaration.get("parameters") or declaration.get("parametersJsonSchema")
    return arguments(schema, prompt[:_SNIPPET] or str(declaration.get("name", "")))


def _last_user_text(contents: Sequence[Mapping[str, Any]]) -> str:
    for content in reversed(contents):
        if content.get("role") == "user" and _texts(content):
            return _texts(content)
    return ""


def _steps_since_user_text(contents: Sequence[Mapping[str, Any]]) -> int:
    steps = 0
    for content in reversed(contents):
        if content.get("role") == "user" and _texts(content):
            break
        if content.get("role") == "model":
            steps += 1
    return steps


def plan_reply(body: Mapping[str, Any], *, call_ids: bool = True) -> Reply:
    contents = body["contents"]
    digest = hashlib.sha256(orjson.dumps(contents)).hexdigest()[:12]
    prompt = _last_user_text(contents)
    config = body.get("generationConfig") or {}
    wants_thoughts = (config.get("thinkingConfig") or {}).get("includeThoughts") is True
    thought = f"**Thinking** about \"{prompt[:_SNIPPET]}\" ({digest})" if wants_thoughts else None
    tools = _tools(body)
    last = contents[-1]
    results = _responses(last) if last.get("role") == "user" else []
    steps = _steps_since_user_text(contents)
    # A "chain" prompt calls the next tool once more; only where there is another tool to call.
    chained = bool(_CHAIN.search(prompt)) and len(tools) > 1 and steps < 2
    calling = bool(tools) and (not results or chained)
    if calling:
        count = 2 if "both" in prompt.lower() and len(tools) > 1 else 1
        start = steps % len(tools)
        chosen = [tools[(start + i) % len(tools)] for i in range(count)]
        calls = tuple(Call(name=str(d.get("name")), args=_args_for(d, prompt),
                           id=f"fc{digest[:6]}{i}" if call_ids else "")
                      for i, d in enumerate(chosen))
        return Reply(thought=thought, text="", calls=calls, digest=digest)
    if results:
        quoted = "; ".join(orjson.dumps(r.get("response")).decode()[:_SNIPPET] for r in results)
        text = f"Here is what the tools said: {quoted}."
    else:
        text = f"You said \"{prompt[:_SNIPPET]}\". This is the emulated Gemini answer ({digest})."
    return Reply(thought=thought, text=text, calls=(), digest=digest)


def _call_part(call: Call, signer: Signer, *, signed: bool) -> dict[str, Any]:
    wire: dict[str, Any] = {"name": call.name, "args": call.args}
    if call.id:
        wire["id"] = call.id
    part: dict[str, Any] = {"functionCall": wire}
    if signed:
        part[SIG] = signer.issue(KIND, call_binding(call.name, call.args))
    return part


def _usage(reply: Reply, prompt_bytes: int) -> dict[str, Any]:
    out = max(1, len(reply.text) // 4 + 8 * len(reply.calls))
    thoughts = len(reply.thought or "") // 4
    return {"promptTokenCount": max(1, prompt_bytes // 4), "candidatesTokenCount": out,
            "totalTokenCount": max(1, prompt_bytes // 4) + out + thoughts,
            **({"thoughtsTokenCount": thoughts} if thoughts else {})}


def _envelope(parts: list[dict[str, Any]], model: str, reply: Reply, *,
              finish: bool, usage: dict[str, Any]) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model,
            "responseId": f"tl-{reply.digest}"}


def whole_body(reply: Reply, model: str, signer: Signer, prompt_bytes: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if reply.thought:
        parts.append({"text": reply.thought, "thought": True})
    if reply.calls:
        parts.extend(_call_part(c, signer, signed=i == 0) for i, c in enumerate(reply.calls))
    else:
        parts.append({"text": reply.text, SIG: signer.issue(KIND, text_binding(reply.text))})
    return _envelope(parts, model, reply, finish=True, usage=_usage(reply, prompt_bytes))


def stream_chunks(reply: Reply, model: str, signer: Signer,
                  prompt_bytes: int) -> list[dict[str, Any]]:
    usage = _usage(reply, prompt_bytes)
    chunks: list[list[dict[str, Any]]] = []
    if reply.thought:
        chunks.append([{"text": reply.thought, "thought": True}])
    if reply.calls:
        chunks.extend([_call_part(c, signer, signed=i == 0)] for i, c in enumerate(reply.calls))
        tail: dict[str, Any] = {"text": ""}
    else:
        cut = max(1, len(reply.text) // 3)
        pieces = [reply.text[:cut], reply.text[cut:2 * cut], reply.text[2 * cut:]]
        chunks.extend([{"text": piece}] for piece in pieces if piece)
        tail = {"text": "", SIG: signer.issue(KIND, text_binding(reply.text))}
    chunks.append([tail])
    return [_envelope(parts, model, reply, finish=i == len(chunks) - 1, usage=usage)
            for i, parts in enumerate(chunks)]


def sse_bytes(chunks: list[dict[str, Any]]) -> list[bytes]:
    return [b"data: " + orjson.dumps(c) + b"\r\n\r\n" for c in chunks]


def json_array_bytes(chunks: list[dict[str, Any]]) -> list[bytes]:
    pieces = [b"[" + orjson.dumps(chunks[0], option=orjson.OPT_INDENT_2)]
    pieces.extend(b"\r\n,\r\n" + orjson.dumps(c, option=orjson.OPT_INDENT_2) for c in chunks[1:])
    pieces.append(b"\r\n]")
    return pieces
