"""OpenAI Responses wire names, the codec's ``native`` namespace, and small shared helpers.

Facts: developers.openai.com/api/docs/guides/reasoning, openai-python ``types/responses`` and the
recordings under
``tests/fixtures/openai-responses/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

API = "openai-responses"
#: The namespace of every ``native`` record this codec owns (one output item, verbatim).
NS = API

# Output item types with a canonical meaning; every other type is kept as an ``Opaque`` part.
REASONING, MESSAGE = "reasoning", "message"
FUNCTION_CALL, FUNCTION_CALL_OUTPUT = "function_call", "function_call_output"
ENCRYPTED = "encrypted_content"
#: The ``include`` value that asks for encrypted reasoning. Now returned by default, but "the API
#: still accepts the legacy value for compatibility"
#: (developers.openai.com/api/docs/guides/reasoning): harmless to send.
INCLUDE_ENCRYPTED = "reasoning.encrypted_content"
PHASE = "phase"  # assistant message phase: "commentary" | "final_answer" (gpt-5.3-codex+)

# Content part types inside items.
OUTPUT_TEXT, REFUSAL = "output_text", "refusal"
SUMMARY_TEXT, REASONING_TEXT = "summary_text", "reasoning_text"
#: Output-only fields of an output_text part: never sent back (the accepted replays in the
#: recordings leave ``logprobs`` off while keeping ``annotations``).
OUTPUT_ONLY_PART_KEYS = frozenset({"logprobs"})

# Stream event types (the SSE ``event:`` line, or the payload's ``type`` when a relay sends
# ``data:`` lines only, as OpenRouter does: pydantic-ai-openrouter-responses-raw-cot-stream).
EV_ITEM_ADDED = "response.output_item.added"
EV_ITEM_DONE = "response.output_item.done"
EV_TEXT_DELTA = "response.output_text.delta"
EV_REFUSAL_DELTA = "response.refusal.delta"
EV_ARGS_DELTA = "response.function_call_arguments.delta"
EV_ARGS_DONE = "response.function_call_arguments.done"
EV_SUMMARY_DELTA = "response.reasoning_summary_text.delta"
EV_REASONING_DELTA = "response.reasoning_text.delta"
EV_PART_ADDED = "response.content_part.added"
EV_COMPLETED = "response.completed"
EV_INCOMPLETE = "response.incomplete"
EV_FAILED = "response.failed"
EV_CREATED = "response.created"
EV_ERROR = "error"
FINAL_EVENTS = frozenset({EV_COMPLETED, EV_INCOMPLETE, EV_FAILED})


def is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """``value`` is a JSON object (its keys are strings: JSON's are)."""
    return type(value) is dict or isinstance(value, Mapping)


def text_of(value: Any) -> str:
    """``value`` when it is a string, else "" (wire fields may be null or the wrong type)."""
    return value if isinstance(value, str) else ""


def joined(parts: Any, kind: str) -> str | None:
    """The texts of the ``kind`` parts of a content or summary list, joined (None when none)."""
    if not isinstance(parts, list):
        return None
    texts = [text_of(p.get("text")) for p in parts if is_map(p) and p.get("type") == kind]
    return "\n\n".join(texts) if texts else None
