"""Interactions wire names, in one place (source: google-genai 3.6.1 ``_gaos/types/interactions``).

A request is ``{"model", "input": [step…], "store", "previous_interaction_id",
"system_instruction", "tools", "stream", "generation_config"}``; an answer is an ``Interaction``
whose ``steps`` list the model's ``thought`` (``signature``, ``summary``), ``model_output``
(``content``) and ``function_call`` (``id``, ``name``, ``arguments``) steps. Input steps are
``user_input`` (``content``) and ``function_result`` (``call_id``, ``result``, ``is_error``).
"""

from __future__ import annotations

from typing import Any

API = "gemini-interactions"
#: The namespace of this API's values under ``native`` (the interaction id, the chain digest).
NS = "gemini-interactions"
#: The fingerprint kind of a thought step's signature.
SIG = "thought.signature"

THOUGHT = "thought"
OUTPUT = "model_output"
CALL = "function_call"
RESULT = "function_result"
USER = "user_input"


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def texts(content: Any) -> str:
    """The text of a ``content`` list (``TextContent`` items; other media are skipped)."""
    if not isinstance(content, list):
        return ""
    return "".join(text_of(c.get("text")) for c in content
                   if isinstance(c, dict) and c.get("type") == "text")
