"""Chat Completions wire names, namespaces and constants shared by decode, fold and encode."""

from __future__ import annotations

from typing import Any

from thoughtline.messages import ReasoningKind

API = "openai-chat"
RC, R, RD = "reasoning_content", "reasoning", "reasoning_details"
CARRIERS = frozenset({RC, R, RD})

# Namespaces of ``native`` records this codec owns.
NS_OPENROUTER = "openrouter"  # one reasoning_details item, verbatim
NS_GOOGLE = "google"  # extra_content.google, verbatim (message or tool call)
NS_GOOGLE_LEGACY = "google-legacy"  # 2025 top-level message.thought_signature; kept, never sent
NS_COPILOT = "copilot"  # reasoning_text / reasoning_opaque, function.thought_signature
NS_MISTRAL = "mistral"  # a "thinking" content chunk, verbatim; never sent (strict route)
NS_MERGE = "merge-gateway"  # message.thinking / message.thinking_signature (Merge Gateway)

# The documented dummy that lets Gemini 3 accept a function call it did not sign
# (https://ai.google.dev/gemini-api/docs/thought-signatures).
GEMINI_DUMMY_SIGNATURE = "skip_thought_signature_validator"
PAD = " "  # must-echo placeholder: never "" (DeepSeek V4 rejects it), never null

RD_KINDS: dict[str, ReasoningKind] = {
    "reasoning.text": "text",
    "reasoning.summary": "summary",
    "reasoning.encrypted": "encrypted",
}
RD_CONCAT = frozenset({"text", "summary", "data", "signature"})




def text_of(value: Any) -> str:
    """``value`` when it is a string, else "" (wire fields may be null or the wrong type)."""
    return value if isinstance(value, str) else ""
