"""What the Responses emulator refuses, with the providers' real wordings (each cited).

Owns the checks of one request body: unknown parameters (a route never receives a field it does
not read), the shape of input items, and the rules for replayed encrypted reasoning — an item
edited, issued elsewhere, sent only by id with ``store: false``, cut off from the item it led
to, or a value the provider can no longer decrypt (``thinking_signature_invalid``). DeepSeek's
rules (``wordings="deepseek"``) read a reasoning item for its ``reasoning_text`` only and demand
it back on every tool-calling turn. Knows nothing of thoughtline's codecs: it reads the wire the
way the provider does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from thoughtline.testing.responses_sealing import Sealer

Wordings = Literal["openai", "xai", "relay", "deepseek"]
_NONE: Mapping[str, bool] = MappingProxyType({})

# POST /v1/responses request parameters (OpenAI API reference, openai-python ResponseCreateParams).
_PARAMS = frozenset({
    "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "stream",
    "stream_options", "store", "include", "reasoning", "text", "temperature", "top_p",
    "max_output_tokens", "max_tool_calls", "metadata", "previous_response_id", "prompt_cache_key",
    "prompt_cache_retention", "safety_identifier", "service_tier", "truncation", "user",
    "background", "conversation", "prompt", "top_logprobs",
})
_REASONING_PARAMS = frozenset({"effort", "summary", "context", "mode", "generate_summary"})
# Input item fields per type (openai-python ResponseInputItemParam; the accepted replays in
# tests/fixtures/openai-responses send exactly these).
_ITEM_KEYS: Mapping[str, frozenset[str]] = {
    "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content", "status"}),
    "message": frozenset({"type", "id", "role", "content", "status", "phase"}),
    "function_call": frozenset({"type", "id", "call_id", "name", "arguments", "status"}),
    "function_call_output": frozenset({"type", "id", "call_id", "output", "status"}),
    "compaction": frozenset({"type", "id", "encrypted_content"}),
    "compaction_trigger": frozenset({"type"}),
}
_EASY_KEYS = frozenset({"role", "content", "type", "phase"})
_PART_KEYS = frozenset({"type", "text", "annotations", "logprobs"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejection:
    status: int
    body: dict[str, Any]


def _error(message: str, *, code: str | None = None, param: str | None = None,
           status: int = 400) -> Rejection:
    return Rejection(status=status, body={"error": {
        "message": message, "type": "invalid_request_error", "param": param, "code": code}})


def _unknown(param: str) -> Rejection:
    # "Unknown parameter: 'response_format'." (errors/vercel-openai-unknown-parameter-*.json)
    return _error(f"Unknown parameter: '{param}'.", code="unknown_parameter", param=param)


def _check_params(body: Mapping[str, Any]) -> Rejection | None:
    for name in body:
        if name not in _PARAMS:
            return _unknown(name)
    reasoning = body.get("reasoning")
    if isinstance(reasoning, Mapping):
        for name in reasoning:
            if name not in _REASONING_PARAMS:
                return _unknown(f"reasoning.{name}")
    if not isinstance(body.get("input"), list):
        return _error("Invalid type for 'input': expected a string or an array.", param="input")
    return None


def _check_item(index: int, item: Any) -> Rejection | None:
    if not isinstance(item, Mapping):
        return _error(f"Invalid type for 'input[{index}]': expected an object.",
                      param=f"input[{index}]")
    kind: Any = item.get("type")  # (any JSON value: looked up as it is)
    allowed = _ITEM_KEYS.get(kind) if kind != "message" or "id" in item else None
    if allowed is None and kind in (None, "message"):
        allowed = _EASY_KEYS
    if allowed is None:
        return None  # other item types (web search calls …) are replayed as received
    for key in item:
        if key not in allowed:
            return _unknown(f"input[{index}].{key}")
    content = item.get("content")
    if item.get("role") == "assistant" and isinstance(content, list):
        for k, part in enumerate(content):
            for key in part if isinstance(part, Mapping) else ():
                if key not in _PART_KEYS:
                    return _unknown(f"input[{index}].content[{k}].{key}")
    return None


def _decrypt_error(item: Mapping[str, Any], verdict: str, wordings: Wordings) -> Rejection:
    item_id = item.get("id") or "(no id)"
    value = str(item.get("encrypted_content"))
    if wordings == "xai":
        # hermes-agent #32617 (xAI)
        return _error("Could not decrypt the provided encrypted_content. Ensure the value is the "
                      "unmodified encrypted_content from a previous response.")
    if wordings == "relay":
        # hermes-agent #119336, opencode-go (a relay serving several accounts)
        return _error(f"The encrypted content for item {item_id} was not issued to this caller.",
                      code="invalid_encrypted_content")
    if verdict == "foreign":
        # "The encrypted content gAAA… could not be verified." (code
        # invalid_encrypted_content; its variants: NousResearch/hermes-agent#32617)
        return _error(f"The encrypted content {value[:24]}… could not be verified.",
                      code="invalid_encrypted_content")
    # hermes-agent #32617, #32062
    return _error(f"The encrypted content for item {item_id} could not be verified. Reason: "
                  "Encrypted content could not be decrypted or parsed.",
                  code="invalid_encrypted_content")


def _signature_invalid(value: str, named: bool) -> Rejection:
    """A value the provider can no longer decrypt (a rotated key, another account's item):
    openclaw/openclaw#92941, NousResearch/hermes-agent#70595. The body seen in the wild
    quotes the value by its ends and names no ``param`` (kaitranntt/ccs #1402); the unnamed form
    is the bare reason."""
    reason = "Encrypted content could not be decrypted or parsed."
    message = (f"The encrypted content {value[:4]}...{value[-4:]} could not be verified. "
               f"Reason: {reason}") if named else reason
    return _error(message, code="thinking_signature_invalid")


def _readable(item: Mapping[str, Any]) -> bool:
    content = item.get("content")
    return isinstance(content, list) and any(
        isinstance(p, Mapping) and p.get("type") == "reasoning_text" and p.get("text")
        for p in content)


def _check_reasoning(items: Sequence[Any], index: int, *, sealer: Sealer, stateless: bool,
                     wordings: Wordings, readable: bool = False, bare: bool = False,
                     invalid: Mapping[str, bool] = _NONE) -> Rejection | None:
    item = items[index]
    value = item.get("encrypted_content")
    if wordings == "deepseek":
        # DeepSeek's /responses is stateless: its items' encrypted_content is "<response
        # id>-<n>", a reference to nothing kept (pydantic-ai-deepseek-responses-replay-
        # reasoning); the reasoning it reads back is the reasoning_text (api-docs.deepseek.com,
        # thinking mode).
        return None
    if isinstance(value, str) and value in invalid:
        return _signature_invalid(value, invalid[value])
    if not value and bare and item.get("id"):
        return None  # an upstream that takes the item bare (see ResponsesPersonality.bare)
    if not value and readable and _readable(item):
        # A relay without encryption takes its readable reasoning back as it gave it
        # (NousResearch/hermes-agent#91104: Kimi on vLLM behind a Responses front).
        return None
    if not value:
        # opencode PR #2480: an item sent by id alone when nothing was stored
        tail = (" Items are not persisted when `store` is set to false. Try again with `store` "
                "set to true, or remove this item from your input.") if stateless else ""
        return _error(f"Item with id '{item.get('id')}' not found.{tail}", param="input")
    opened = sealer.open(value)
    if opened.verdict != "ok":
        return _decrypt_error(item, opened.verdict, wordings)
    following = items[index + 1] if index + 1 < len(items) else None
    wanted = opened.plaintext.get("next") if opened.plaintext else None
    if wanted and not (isinstance(following, Mapping) and following.get("id") == wanted):
        # errors/openai-responses-400-reasoning-item-without-following-item (recorded)
        return _error(f"Item '{item.get('id')}' of type 'reasoning' was provided without its "
                      "required following item.", param="input")
    return None


def _check_outputs(items: Sequence[Any]) -> Rejection | None:
    answered = {i.get("call_id") for i in items
                if isinstance(i, Mapping) and i.get("type") == "function_call_output"}
    for item in items:
        if (isinstance(item, Mapping) and item.get("type") == "function_call"
                and item.get("call_id") not in answered):
            # errors/deepseek-responses-400-no-tool-output (recorded; OpenAI words it
            # "No tool output found for function call …")
            return _error(f"No tool output found for function call {item.get('call_id')}.",
                          param="input")
    return None


def _check_thinking(items: Sequence[Any]) -> Rejection | None:
    """DeepSeek: a turn that called a tool must bring its reasoning back. The chat endpoint's
    wording is "The `reasoning_content` in the thinking mode must be passed back to the API."
    (api-docs.deepseek.com/guides/thinking_mode); /responses says ``reasoning_text``
    (lidge-jun/opencodex#1594)."""
    called = reasoned = False
    for item in [*items, None]:
        kind = item.get("type") if isinstance(item, Mapping) else None
        role = item.get("role") if isinstance(item, Mapping) else None
        if kind in ("reasoning", "function_call") or role == "assistant":
            called = called or kind == "function_call"
            reasoned = reasoned or (kind == "reasoning" and _readable(item))
            continue
        if called and not reasoned:  # the end of a tool-calling turn without its reasoning
            return _error("The `reasoning_text` in the thinking mode must be passed back to "
                          "the API.")
        called = reasoned = False
    return None


def check_request(body: Mapping[str, Any], *, sealer: Sealer, wordings: Wordings = "openai",
                  readable: bool = False, invalid: Mapping[str, bool] = _NONE,
                  bare: bool = False) -> Rejection | None:
    """The rejection this body earns, or None when the emulated provider accepts it
    (``readable``: a relay that issues readable reasoning items and takes them back;
    ``invalid``: encrypted values it can no longer decrypt → whether its error names them;
    ``bare``: it takes a reasoning item back without its encrypted_content)."""
    rejection = _check_params(body)
    if rejection is not None:
        return rejection
    items = body["input"]
    stateless = body.get("store") is False
    for index, item in enumerate(items):
        rejection = _check_item(index, item)
        if rejection is None and item.get("type") == "reasoning":
            rejection = _check_reasoning(items, index, sealer=sealer, stateless=stateless,
                                         wordings=wordings, readable=readable, bare=bare,
                                         invalid=invalid)
        if rejection is None and item.get("type") == "compaction_trigger" \
                and index != len(items) - 1:
            # openai-python types/responses (compaction_trigger): "Compacts the current context.
            # Must be the final input item"
            rejection = _error("compaction_trigger must be the final input item.",
                               param=f"input[{index}]")
        if rejection is None and item.get("type") == "compaction":
            opened = sealer.open(str(item.get("encrypted_content")))
            if opened.verdict != "ok" or "compaction" not in (opened.plaintext or {}):
                rejection = _decrypt_error(item, opened.verdict, wordings)
        if rejection is not None:
            return rejection
    if wordings == "deepseek":
        rejection = _check_thinking(items)
    return rejection or _check_outputs(items)
