"""Anthropic Messages wire names, namespaces and constants shared by decode, fold and encode.

Facts: provider-contracts.md §5 and provider-updates.md §1a (the newer, where they differ).
"""

from __future__ import annotations

from typing import Any

from thoughtline.messages import FinishReason

API = "anthropic"
NS = "anthropic"  # the namespace of native values this codec owns (verbatim blocks, citations)

#: Keys of a client's message kept natively by the client face (``client``) for an Anthropic
#: upstream: a turn-scoped system message's flag, a user message's content as sent, and the mark
#: of a canonical turn whose blocks went out with the turn before it.
IN_PLACE = "in_place"
CONTENT = "content"
CARRIED = "carried"

THINKING = "thinking"
REDACTED = "redacted_thinking"
TEXT = "text"
TOOL_USE = "tool_use"
TOOL_RESULT = "tool_result"

#: Header values (preserved-thinking pages; the version itself is route data).
BINDING_BETA = "thinking-binding-controls-2026-08-01"
VERSION_HEADER = "anthropic-version"
BETA_HEADER = "anthropic-beta"

#: ``thinking.block_binding.prefix_mismatch_behavior`` values (provider-updates §1a).
MISMATCH_BEHAVIORS = ("error", "drop_block")
#: The per-session settings key the codec reads from ``RequestSpec.settings``.
SETTING_MISMATCH = "prefix_mismatch_behavior"

EFFORTS = ("low", "medium", "high", "xhigh", "max")

FINISH: dict[str, FinishReason] = {
    "end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
    "max_tokens": "length", "model_context_window_exceeded": "length",
    "pause_turn": "pause", "refusal": "refusal",
}


def neutral_finish(reason: Any) -> FinishReason | None:
    if not isinstance(reason, str) or not reason:
        return None
    return FINISH.get(reason, "other")


def text_of(value: Any) -> str:
    """``value`` when it is a string, else "" (wire fields may be null or the wrong type)."""
    return value if isinstance(value, str) else ""
