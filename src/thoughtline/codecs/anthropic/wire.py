"""Anthropic Messages wire names, namespaces and constants shared by decode, fold and encode.

Facts: docs.anthropic.com/en/docs/build-with-claude/extended-thinking and
platform.claude.com/docs/en/build-with-claude/preserved-thinking.
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

#: Blocks of late 2026 (facts and shapes: anthropic-sdk-python 2.17 beta types).
#: ``fallback`` marks where a server-side fallback handed the turn to another model (``to``):
#: the thinking before and after it are separately rooted chains, so it goes back verbatim and
#: in place, to the route that issued it only. ``tool_addition`` / ``tool_removal`` change the
#: tools offered from their place on (a ``tool_definition`` carries an inline tool by value).
FALLBACK = "fallback"
COMPACTION = "compaction"
TOOL_ADDITION = "tool_addition"
TOOL_REMOVAL = "tool_removal"
#: The parameter in which the Messages face hands an Anthropic upstream the client's ``tools``
#: as sent (``encode.top_tools``): the canonical tools are what other APIs are offered.
TOOLS_AS_SENT = "tools_as_sent"
#: Blocks only the route that made them may read, kept where they are (never moved).
ISSUER_ONLY = frozenset({FALLBACK, COMPACTION})

#: Header values (preserved-thinking pages; the version itself is route data).
BINDING_BETA = "thinking-binding-controls-2026-08-01"
VERSION_HEADER = "anthropic-version"
BETA_HEADER = "anthropic-beta"

#: ``thinking.block_binding.prefix_mismatch_behavior`` values (preserved-thinking page).
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
