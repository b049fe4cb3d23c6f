"""How each emulated provider puts a planned turn on the wire, whole and streamed.

Owns response shapes: where reasoning goes (``reasoning_content``, ``reasoning``, Mistral thinking
chunks, OpenRouter ``reasoning_details``, Gemini ``extra_content``, Copilot ``reasoning_text`` /
``reasoning_opaque``), how it is fragmented into stream deltas, and the completion and chunk
envelopes. Shapes follow the recorded fixtures under ``shared/fixtures``. A streamed reply folds
to the same message as the whole one. Does not own what the model says (``script``) or what is
refused (``rejections``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, assert_never

from thoughtline.testing.personalities import Personality
from thoughtline.testing.script import PlannedCall, TurnPlan, call_text
from thoughtline.testing.signing import Signer

Json = Any  # a provider payload


@dataclass(frozen=True, slots=True)
class Comment:
    """An SSE comment line (``: text``), as OpenRouter sends while it works."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One answer in a provider's shape: the whole message and the stream deltas that fold to it."""

    message: dict[str, Any]
    deltas: list[dict[str, Any] | Comment]
    final_delta: dict[str, Any] = field(default_factory=dict)


def fragments(text: str, words: int = 3) -> list[str]:
    """``text`` cut into pieces of a few words; the pieces concatenate back to ``text``."""
    tokens = re.findall(r"\s*\S+\s*", text) or ([text] if text else [])
    return ["".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]


def _whole_call(call: PlannedCall, *, index: bool = False) -> dict[str, Any]:
    whole: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }
    return {"index": 0, **whole} if index else whole


def _call_deltas(call: PlannedCall) -> list[dict[str, Any]]:
    head = {"index": 0, "id": call.id, "type": "function"}
    start = [{"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]}]
    size = max(1, len(call.arguments) // 3)
    pieces = [call.arguments[i : i + size] for i in range(0, len(call.arguments), size)]
    return start + [{"tool_calls": [{"index": 0, "function": {"arguments": p}}]} for p in pieces]


def build_reply(personality: Personality, model: str, plan: TurnPlan, signer: Signer) -> Reply:
    """The planned turn in ``personality``'s response shape."""
    match personality.shape:
        case "reasoning_content" | "reasoning":
            return _field_reply(personality.shape, plan)
        case "mistral":
            return _mistral_reply(plan)
        case "openrouter":
            return _openrouter_reply(model, plan, signer)
        case "gemini":
            if "gemini-2.5" in model:
                return _gemini25_reply(plan, signer)
            return _gemini_reply(plan, signer)
        case "copilot":
            return _copilot_reply(plan, signer)
        case unreachable:
            assert_never(unreachable)


def _field_reply(name: str, plan: TurnPlan) -> Reply:
    """DeepSeek-style (``reasoning_content``) or vLLM/Groq-style (``reasoning``) string field."""
    message: dict[str, Any] = {"role": "assistant", "content": plan.content, name: plan.reasoning}
    deltas: list[dict[str, Any] | Comment] = [{"role": "assistant", "content": None, name: ""}]
    deltas += [{"content": None, name: f} for f in fragments(plan.reasoning)]
    deltas += [{"content": f, name: None} for f in fragments(plan.content)]
    if plan.tool_call is not None:
        message["tool_calls"] = [_whole_call(plan.tool_call, index=True)]
        deltas += _call_deltas(plan.tool_call)
    return Reply(message=message, deltas=deltas, final_delta={"content": "", name: None})


def _mistral_reply(plan: TurnPlan) -> Reply:
    """Magistral: ``content`` is a list whose first chunk is ``{"type": "thinking", ...}``."""
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": plan.reasoning}]}
    content: list[dict[str, Any]] = [thinking]
    if plan.content:
        content.append({"type": "text", "text": plan.content})
    calls = [_whole_call(plan.tool_call, index=True)] if plan.tool_call else None
    message = {"role": "assistant", "content": content, "tool_calls": calls}
    deltas: list[dict[str, Any] | Comment] = [{"role": "assistant", "content": ""}]
    deltas += [
        {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": f}]}]}
        for f in fragments(plan.reasoning)
    ]
    deltas += [{"content": f} for f in fragments(plan.content)]
    if calls:
        deltas.append({"tool_calls": calls})
    return Reply(message=message, deltas=deltas, final_delta={"content": ""})


def _openrouter_details(
    model: str, plan: TurnPlan, signer: Signer
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(whole items, streamed readable fragments, streamed closing items) for the model's family."""
    text = plan.reasoning
    pieces = fragments(text)
    if "claude" in model:
        fmt = "anthropic-claude-v1"
        signature = signer.issue("anthropic-signature", text)
        item = {
            "type": "reasoning.text",
            "text": text,
            "signature": signature,
            "format": fmt,
            "index": 0,
        }
        frags = [{"type": "reasoning.text", "text": p, "format": fmt, "index": 0} for p in pieces]
        closing = {"type": "reasoning.text", "signature": signature, "format": fmt, "index": 0}
        return [item], frags, [closing]
    if "gpt" in model or model.startswith("openai/"):
        fmt = "openai-responses-v1"
        rid = f"rs_{plan.request_digest[:48]}"
        summary = {
            "type": "reasoning.summary",
            "summary": text,
            "id": rid,
            "format": fmt,
            "index": 0,
        }
        encrypted = {
            "type": "reasoning.encrypted",
            "data": signer.issue("openai-encrypted", text),
            "id": rid,
            "format": fmt,
            "index": 0,
        }
        frags = [{**summary, "summary": p} for p in pieces]
        return [summary, encrypted], frags, [encrypted]
    if "gemini" in model:
        fmt = "google-gemini-v1"
        readable = {"type": "reasoning.text", "text": text, "format": fmt, "index": 0}
        encrypted = {
            "type": "reasoning.encrypted",
            "data": signer.issue("gemini-signature", text),
            **({"id": plan.tool_call.id} if plan.tool_call else {}),
            "format": fmt,
            "index": 0,
        }
        frags = [{**readable, "text": p} for p in pieces]
        return [readable, encrypted], frags, [encrypted]
    readable = {"type": "reasoning.text", "text": text, "format": "unknown", "index": 0}
    return [readable], [{**readable, "text": p} for p in pieces], []


def _openrouter_reply(model: str, plan: TurnPlan, signer: Signer) -> Reply:
    items, frags, closing = _openrouter_details(model, plan, signer)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": plan.content if plan.tool_call is None else None,
        "refusal": None,
        "reasoning": plan.reasoning,
        "reasoning_details": items,
    }
    base = {"role": "assistant", "content": "", "reasoning": None}
    processing = Comment("OPENROUTER PROCESSING")
    deltas: list[dict[str, Any] | Comment] = [processing, processing]
    deltas.append({**base, "reasoning_details": []})
    deltas += [
        {**base, "reasoning": f.get("text", f.get("summary")), "reasoning_details": [f]}
        for f in frags
    ]
    deltas.append(processing)
    # Gemini's encrypted item (the thought signature) arrives after the function call, as recorded.
    late = "gemini" in model and plan.tool_call is not None
    if not late:
        deltas += [{**base, "reasoning_details": [c]} for c in closing]
    deltas += [{**base, "content": f, "reasoning_details": []} for f in fragments(plan.content)]
    if plan.tool_call is not None:
        message["tool_calls"] = [_whole_call(plan.tool_call)]
        deltas += [
            {"role": "assistant", "content": None, **d} for d in _call_deltas(plan.tool_call)
        ]
    if late:
        deltas += [{**base, "reasoning_details": [c]} for c in closing]
    return Reply(message=message, deltas=deltas, final_delta=base)


def _gemini_reply(plan: TurnPlan, signer: Signer) -> Reply:
    """Gemini 3 style: the first function call, or the text turn, carries the thought signature."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": plan.content if plan.tool_call is None else None,
        "reasoning_content": plan.reasoning,
    }
    deltas: list[dict[str, Any] | Comment] = [{"role": "assistant"}]
    deltas += [{"reasoning_content": f} for f in fragments(plan.reasoning)]
    call = plan.tool_call
    if call is not None:
        text = call_text(call.name, call.arguments)
        extra = {"google": {"thought_signature": signer.issue("gemini-signature", text)}}
        message["tool_calls"] = [{**_whole_call(call), "extra_content": extra}]
        deltas.append({"tool_calls": [{"index": 0, **_whole_call(call), "extra_content": extra}]})
    else:
        extra = {"google": {"thought_signature": signer.issue("gemini-signature", plan.content)}}
        message["extra_content"] = extra
        pieces: list[dict[str, Any]] = [{"content": f} for f in fragments(plan.content)]
        pieces[-1] = {**pieces[-1], "extra_content": extra}
        deltas += pieces
    return Reply(message=message, deltas=deltas)


def _gemini25_reply(plan: TurnPlan, signer: Signer) -> Reply:
    """Gemini 2.5 on the OpenAI-compatible endpoint, shaped like the recording
    ``tests/fixtures/gemini-openai-compat/pydantic-ai-gemini25-openai-compat-extra-content-
    thought-signature.i0.response.json``: no ``reasoning_content``; one signature for the turn,
    at message level both as ``extra_content.google`` (with ``"thought": true``) and as a top-level
    ``thought_signature``; tool calls with an empty ``id`` and no signature of their own."""
    call = plan.tool_call
    # A message-level signature is bound to the message's text (rejections._check_gemini), which
    # is empty on a tool-call turn.
    signature = signer.issue("gemini-signature", plan.content if call is None else "")
    extra = {"google": {"thought": True, "thought_signature": signature}}
    message: dict[str, Any] = {"extra_content": extra, "role": "assistant",
                               "thought_signature": signature}
    deltas: list[dict[str, Any] | Comment] = [{"role": "assistant"}]
    if call is not None:
        whole = {"function": {"arguments": call.arguments, "name": call.name}, "id": "",
                 "type": "function"}
        message["tool_calls"] = [whole]
        deltas.append({"tool_calls": [{"index": 0, **whole}]})
    else:
        message["content"] = plan.content
        deltas += [{"content": f} for f in fragments(plan.content)]
    deltas.append({"extra_content": extra, "thought_signature": signature})
    return Reply(message=message, deltas=deltas)


def _copilot_reply(plan: TurnPlan, signer: Signer) -> Reply:
    """Copilot: readable ``reasoning_text`` deltas; the opaque blob arrives after text has started,
    and a fresh one (the valid one) just before each tool call."""
    pieces = fragments(plan.reasoning)
    final = signer.issue("copilot-opaque", plan.reasoning)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": plan.content if plan.tool_call is None else None,
        "reasoning_text": plan.reasoning,
        "reasoning_opaque": final,
    }
    deltas: list[dict[str, Any] | Comment] = [{"role": "assistant", "content": ""}]
    deltas.append({"reasoning_text": pieces[0]})
    if plan.tool_call is not None:
        deltas.append({"reasoning_opaque": signer.issue("copilot-opaque", pieces[0])})
    deltas += [{"reasoning_text": p} for p in pieces[1:]]
    deltas.append({"reasoning_opaque": final})
    deltas += [{"content": f} for f in fragments(plan.content)]
    if plan.tool_call is not None:
        message["tool_calls"] = [_whole_call(plan.tool_call)]
        deltas += _call_deltas(plan.tool_call)
    return Reply(message=message, deltas=deltas)


# --- envelopes -------------------------------------------------------------------------------


def _usage(plan: TurnPlan, prompt_bytes: int) -> dict[str, Any]:
    reasoning = len(plan.reasoning.split())
    answer = len(plan.content.split()) + (
        len(plan.tool_call.arguments) // 4 if plan.tool_call else 0
    )
    prompt = max(1, prompt_bytes // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": reasoning + answer,
        "total_tokens": prompt + reasoning + answer,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def _envelope(kind: str, model: str, plan: TurnPlan) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{plan.request_digest[:24]}",
        "object": kind,
        "created": int(time.time()),
        "model": model,
    }


def completion_body(reply: Reply, model: str, plan: TurnPlan, prompt_bytes: int) -> dict[str, Any]:
    """The non-streamed response body."""
    choice = {
        "index": 0,
        "message": reply.message,
        "logprobs": None,
        "finish_reason": plan.finish_reason,
    }
    return {
        **_envelope("chat.completion", model, plan),
        "choices": [choice],
        "usage": _usage(plan, prompt_bytes),
    }


def stream_events(
    reply: Reply, model: str, plan: TurnPlan, *, prompt_bytes: int, include_usage: bool
) -> list[dict[str, Any] | Comment]:
    """Every SSE event of the streamed response, in order, without the ``[DONE]`` sentinel."""
    head = _envelope("chat.completion.chunk", model, plan)

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**head, "choices": [choice]}

    events: list[dict[str, Any] | Comment] = [
        d if isinstance(d, Comment) else chunk(d) for d in reply.deltas
    ]
    events.append(chunk(reply.final_delta, plan.finish_reason))
    if include_usage:
        events.append({**head, "choices": [], "usage": _usage(plan, prompt_bytes)})
    return events
