"""What each emulated Chat Completions provider refuses, with the provider's real error body.

Owns the request checks: strict schemas (Mistral, Groq, Cerebras), must-echo of
``reasoning_content`` (DeepSeek, Kimi, MiMo), and verification of signed carriers coming back
(OpenRouter ``reasoning_details``, Gemini thought signatures, Copilot opaque blobs). Wordings
follow the public threads listed in tests/fixtures/SOURCES.md (category 7) and the docs cited
at each rule. Does not own response shapes or the HTTP layer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.testing.personalities import EchoRule, Personality, StrictRule
from thoughtline.testing.script import call_text, message_text
from thoughtline.testing.signing import SKIP_THOUGHT_SIGNATURE, OpaqueKind, Signer

Json = Any  # a verbatim provider payload


@dataclass(frozen=True, slots=True)
class Rejection:
    """An error response: HTTP status and the JSON body the provider would send."""

    status: int
    body: Json


def check_request(
    personality: Personality, body: Mapping[str, Any], signer: Signer
) -> Rejection | None:
    """The first rule the request breaks for this personality, or None when it is accepted."""
    messages = body.get("messages")
    if (
        not isinstance(messages, list)
        or not messages
        or not all(isinstance(m, dict) for m in messages)
    ):
        return Rejection(400, _openai_error("`messages` must be a non-empty array of objects"))
    model = given if isinstance(given := body.get("model"), str) else ""
    if personality.strict is not None and (found := _check_strict(personality.strict, body)):
        return found
    if personality.echo is not None and (found := _check_echo(personality.echo, messages)):
        return found
    match personality.shape:
        case "openrouter":
            return _check_openrouter(messages, model, signer)
        case "gemini":
            return _check_gemini(messages, model, signer)
        case "copilot":
            return _check_copilot(messages, signer)
        case _:
            return None


def _openai_error(message: str, code: str | None = None) -> Json:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    }


def _assistants(messages: Sequence[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
    return ((i, m) for i, m in enumerate(messages) if m.get("role") == "assistant")


def _invalid_signature(anthropic_index: int) -> str:
    return f"messages.{anthropic_index}.content.0: Invalid `signature` in `thinking` block"


def _anthropic_index(messages: Sequence[dict[str, Any]], index: int) -> int:
    # Anthropic's messages array has no system/developer entries.
    return sum(1 for m in messages[:index] if m.get("role") not in ("system", "developer"))


# --- strict schemas (docs/routes.md; wordings: tests/fixtures/SOURCES.md, category 7) --------

_ASSISTANT_KEYS: Mapping[StrictRule, frozenset[str]] = {
    "mistral": frozenset({"role", "content", "tool_calls", "prefix", "name"}),
    "groq": frozenset({"role", "content", "name", "tool_calls"}),
    # Cerebras reads `reasoning` back (a recorded multi-turn request replaying it was accepted) and
    # rejects `reasoning_content`: vercel/ai#15042, QwenLM/qwen-code#11045.
    "cerebras": frozenset({"role", "content", "name", "tool_calls", "reasoning"}),
}
_TOOL_CALL_KEYS = frozenset({"id", "type", "function", "index"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
# Mistral validates every role and the top level with pydantic ``extra="forbid"``.
_MISTRAL_ROLE_KEYS: Mapping[str, frozenset[str]] = {
    "system": frozenset({"role", "content"}),
    "user": frozenset({"role", "content"}),
    "tool": frozenset({"role", "content", "tool_call_id", "name"}),
}
_MISTRAL_TOP_KEYS = frozenset(
    {
        "model", "messages", "temperature", "top_p", "max_tokens", "stream", "stop", "random_seed",
        "response_format", "tools", "tool_choice", "presence_penalty", "frequency_penalty", "n",
        "prediction", "parallel_tool_calls", "prompt_mode", "safe_prompt", "metadata",
    }
)  # fmt: skip
# The key exists in Mistral's schema but accepts no sub-keys: include_usage is refused.
_MISTRAL_CLOSED_OBJECTS: Mapping[str, frozenset[str]] = {"stream_options": frozenset()}


def _extra_keys(
    messages: Sequence[dict[str, Any]], allowed: Mapping[str, frozenset[str]]
) -> Iterator[tuple[int, tuple[str | int, ...], Json]]:
    """(message index, path inside the message, value) for every key outside ``allowed[role]``."""
    for i, message in enumerate(messages):
        role = message.get("role")
        keys = allowed.get(role) if isinstance(role, str) else None
        if keys is None:
            continue
        for key, value in message.items():
            if key not in keys:
                yield i, (key,), value
        if message.get("role") != "assistant" or not isinstance(message.get("tool_calls"), list):
            continue
        for j, call in enumerate(message["tool_calls"]):
            if not isinstance(call, dict):
                continue
            for key, value in call.items():
                if key not in _TOOL_CALL_KEYS:
                    yield i, ("tool_calls", j, key), value
            function = call.get("function")
            for key, value in function.items() if isinstance(function, dict) else ():
                if key not in _FUNCTION_KEYS:
                    yield i, ("tool_calls", j, "function", key), value


def _check_strict(rule: StrictRule, body: Mapping[str, Any]) -> Rejection | None:
    messages = body["messages"]
    if rule == "mistral":
        return _mistral_extras(body, messages)
    found = next(_extra_keys(messages, {"assistant": _ASSISTANT_KEYS[rule]}), None)
    if found is None:
        return None
    index, path, _ = found
    if rule == "groq":
        return _groq_rejection(messages, index)
    dotted = ".".join(str(p) for p in (f"messages.{index}.assistant", *path))
    return Rejection(
        400,
        {
            "message": f"{dotted}: property '{dotted}' is unsupported",
            "type": "invalid_request_error",
            "param": "validation_error",
            "code": "wrong_api_format",
        },
    )


def _groq_rejection(messages: Sequence[dict[str, Any]], index: int) -> Rejection:
    where = f"messages.{index}"
    parts = [
        f"('{'.'.join([where, *map(str, path[:-1])])}' : property '{path[-1]}' is unsupported)"
        for i, path, _ in _extra_keys(messages, {"assistant": _ASSISTANT_KEYS["groq"]})
        if i == index
    ]
    text = f"'{where}' : for 'role:assistant' the following must be satisfied[{', '.join(parts)}]"
    return Rejection(400, {"error": {"message": text, "type": "invalid_request_error"}})


def _mistral_extras(
    body: Mapping[str, Any], messages: Sequence[dict[str, Any]]
) -> Rejection | None:
    detail: list[Json] = []

    def forbid(loc: list[str | int], value: Json) -> None:
        detail.append(
            {
                "type": "extra_forbidden",
                "loc": loc,
                "msg": "Extra inputs are not permitted",
                "input": value,
            }
        )

    for key, value in body.items():
        if key in _MISTRAL_CLOSED_OBJECTS and isinstance(value, dict):
            for sub, sub_value in value.items():
                if sub not in _MISTRAL_CLOSED_OBJECTS[key]:
                    forbid(["body", key, sub], sub_value)
        elif key not in _MISTRAL_TOP_KEYS:
            forbid(["body", key], value)
    allowed = {**_MISTRAL_ROLE_KEYS, "assistant": _ASSISTANT_KEYS["mistral"]}
    for index, path, value in _extra_keys(messages, allowed):
        forbid(["body", "messages", index, messages[index]["role"], *path], value)
    if not detail:
        return None
    return Rejection(
        422,
        {
            "object": "error",
            "message": {"detail": detail},
            "type": "invalid_request_message_error",
            "param": None,
            "code": None,
        },
    )


# --- must-echo (api-docs.deepseek.com/guides/thinking_mode, platform.kimi.ai, xiaomimimo.com)


def _check_echo(rule: EchoRule, messages: Sequence[dict[str, Any]]) -> Rejection | None:
    for index, message in _assistants(messages):
        if not message.get("tool_calls"):
            continue
        value = message.get("reasoning_content")
        if isinstance(value, str) and value != "":
            continue  # a single space pad is accepted
        if rule == "kimi":
            text = (
                "thinking is enabled but reasoning_content is missing in assistant tool call "
                f"message at index {index}"
            )
        elif "reasoning_content" not in message:
            text = (
                "Missing `reasoning_content` field in the assistant message at message "
                f"index {index}."
            )
        else:
            text = "The `reasoning_content` in the thinking mode must be passed back to the API."
        return Rejection(400, _openai_error(text, "invalid_request_error"))
    return None


# --- OpenRouter reasoning_details (openrouter.ai/docs/guides/best-practices/reasoning-tokens) -

_OPENROUTER_KINDS: Mapping[str, OpaqueKind] = {
    "anthropic-claude-v1": "anthropic-signature",
    "openai-responses-v1": "openai-encrypted",
    "google-gemini-v1": "gemini-signature",
}
_GEMINI_PRESERVE = (
    "Gemini models require OpenRouter reasoning details to be preserved in each request. Please "
    "refer to our docs: https://openrouter.ai/docs/guides/best-practices/reasoning-tokens"
    "#preserving-reasoning-blocks."
)


def _check_openrouter(
    messages: Sequence[dict[str, Any]], model: str, signer: Signer
) -> Rejection | None:
    for index, message in _assistants(messages):
        details = message.get("reasoning_details")
        items = [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []
        encrypted = any(d.get("type") == "reasoning.encrypted" for d in items)
        if "gemini" in model and message.get("tool_calls") and not encrypted:
            return Rejection(400, {"error": {"message": _GEMINI_PRESERVE, "code": 400}})
        for item in items:
            fmt = item.get("format")
            kind = _OPENROUTER_KINDS.get(fmt) if isinstance(fmt, str) else None
            if kind is None:
                continue
            if item.get("type") == "reasoning.text" and isinstance(item.get("signature"), str):
                text = item.get("text") if isinstance(item.get("text"), str) else ""
                if not signer.verify(kind, item["signature"], text):
                    return _openrouter_upstream(kind, _anthropic_index(messages, index), item)
            elif item.get("type") == "reasoning.encrypted":
                readable = _readable_siblings(items, fmt)
                if not signer.verify(kind, item.get("data"), readable):
                    return _openrouter_upstream(kind, _anthropic_index(messages, index), item)
    return None


def _readable_siblings(items: Sequence[dict[str, Any]], fmt: object) -> str | None:
    texts = [
        d.get("text") if d.get("type") == "reasoning.text" else d.get("summary")
        for d in items
        if d.get("format") == fmt and d.get("type") in ("reasoning.text", "reasoning.summary")
    ]
    strings = [t for t in texts if isinstance(t, str)]
    return "".join(strings) if strings else None


def _openrouter_upstream(
    kind: OpaqueKind, anthropic_index: int, item: Mapping[str, Any]
) -> Rejection:
    """OpenRouter's generic envelope around the upstream provider's own rejection."""
    if kind == "anthropic-signature":
        provider = "Anthropic"
        raw: Json = {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": _invalid_signature(anthropic_index),
            },
        }
    elif kind == "openai-encrypted":
        provider = "OpenAI"
        data = item.get("data")
        short = data[:12] + "..." if isinstance(data, str) else "None"
        raw = _openai_error(
            f"The encrypted content {short} could not be verified.", "invalid_encrypted_content"
        )
    else:
        provider = "Google"
        raw = [_gemini_error("Corrupted thought signature.")]
    metadata = {"raw": orjson.dumps(raw).decode(), "provider_name": provider}
    return Rejection(
        400, {"error": {"message": "Provider returned error", "code": 400, "metadata": metadata}}
    )


# --- Gemini OpenAI-compatible thought signatures (ai.google.dev/gemini-api/docs/thought-signatures)


def _gemini_error(message: str) -> Json:
    return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}


def _google_signature(holder: Mapping[str, Any]) -> tuple[bool, object]:
    extra = holder.get("extra_content")
    google = extra.get("google") if isinstance(extra, dict) else None
    if not isinstance(google, dict) or "thought_signature" not in google:
        return False, None
    return True, google["thought_signature"]


def _gemini_valid(signer: Signer, value: object, text: str) -> bool:
    if value == SKIP_THOUGHT_SIGNATURE:
        return True
    if not isinstance(value, str) or not value.strip():
        return False
    return signer.verify("gemini-signature", value, text)


def _check_gemini(
    messages: Sequence[dict[str, Any]], model: str, signer: Signer
) -> Rejection | None:
    corrupted = Rejection(400, [_gemini_error("Corrupted thought signature.")])
    for index, message in _assistants(messages):
        present, value = _google_signature(message)
        if present and not _gemini_valid(signer, value, message_text(message)):
            return corrupted
        calls = message.get("tool_calls")
        for position, call in enumerate(calls if isinstance(calls, list) else ()):
            if not isinstance(call, dict):
                continue
            function = given if isinstance(given := call.get("function"), dict) else {}
            present, value = _google_signature(call)
            if present:
                text = call_text(function.get("name"), function.get("arguments"))
                if not _gemini_valid(signer, value, text):
                    return corrupted
            elif position == 0 and "gemini-3" in model:
                return Rejection(
                    400, [_gemini_error(_missing_signature(function.get("name"), index))]
                )
    return None


def _missing_signature(name: object, index: int) -> str:
    return (
        "Function call is missing a thought_signature in functionCall parts. This is required for "
        "tools to work correctly, and missing thought_signature may lead to degraded model "
        f"performance. Additional data, function call `default_api:{name}` , position {index}. "
        "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
    )


# --- GitHub Copilot reasoning_opaque (opencode's Copilot chat model; SOURCES.md section 5) ----


def _check_copilot(messages: Sequence[dict[str, Any]], signer: Signer) -> Rejection | None:
    for index, message in _assistants(messages):
        opaque = message.get("reasoning_opaque")
        if opaque is None:
            continue
        text = message.get("reasoning_text")
        bound = text if isinstance(text, str) and text else None
        if not signer.verify("copilot-opaque", opaque, bound):
            where = _anthropic_index(messages, index)
            return Rejection(
                400,
                {
                    "error": {
                        "message": _invalid_signature(where),
                        "code": "invalid_request_body",
                    }
                },
            )
    return None
