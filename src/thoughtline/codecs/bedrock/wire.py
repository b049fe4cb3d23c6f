"""Bedrock Converse wire names, namespaces and constants shared by decode, fold and encode.

Source of every name: the Converse / ConverseStream API reference
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html,
``API_runtime_ReasoningContentBlock.html``) and the recordings in ``tests/fixtures/bedrock``.
"""

from __future__ import annotations

from typing import Any

from thoughtline.messages import FinishReason

API = "bedrock"
#: Namespace of ``native`` records this codec owns (blocks kept verbatim, e.g. citations).
NS = "bedrock"

# Content blocks and their fields.
TEXT, REASONING, TOOL_USE, TOOL_RESULT = "text", "reasoningContent", "toolUse", "toolResult"
REASONING_TEXT, REDACTED, SIGNATURE = "reasoningText", "redactedContent", "signature"

#: What a profile may carry on an assistant turn (also the names a verdict drops):
#: readable ``reasoningText.text``, its ``signature``, and opaque ``redactedContent``.
#: ``reasoningContent`` in a verdict means "the whole block".
CARRIERS = frozenset({REASONING_TEXT, SIGNATURE, REDACTED})

#: Converse rejects a conversation that does not start and end with a user message
#: (Converse API reference); these stand in where the history has none.
USER_FIRST = "(conversation continues)"
USER_LAST = "Continue."
#: A tool result with no text: Converse rejects blank text blocks (Converse API reference).
EMPTY_RESULT = "(empty)"

# ConverseStream event types (the ``:event-type`` frame header).
BLOCK_START, BLOCK_DELTA = "contentBlockStart", "contentBlockDelta"
MESSAGE_STOP, METADATA = "messageStop", "metadata"
EXCEPTION_PREFIX = "exception:"

#: Converse ``stopReason`` → neutral finish
#: (API_runtime_Converse.html#API_runtime_Converse_ResponseSyntax).
STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    "malformed_model_output": "other",
    "malformed_tool_use": "other",
}


def text_of(value: Any) -> str:
    """``value`` when it is a string, else "" (wire fields may be null or the wrong type)."""
    return value if isinstance(value, str) else ""
