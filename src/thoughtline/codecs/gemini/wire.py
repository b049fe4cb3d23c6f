"""Gemini wire names, the native namespace and constants shared by decode, fold and encode."""

from __future__ import annotations

from typing import Any

API = "gemini"
#: Namespace of ``native`` records this codec owns: ``{"thoughtSignature": "<verbatim>"}`` on a
#: Text / ToolCall / Reasoning part, or a whole unknown part (inline data, executable code …) on
#: an ``Opaque``.
NS = "gemini"

SIG = "thoughtSignature"
THOUGHT = "thought"
FC = "functionCall"
FR = "functionResponse"
#: Where a function declaration's JSON Schema goes. ``parameters`` is Gemini's OpenAPI-subset
#: ``Schema``: its protobuf parser answers any keyword it has no field for
#: (``additionalProperties``, ``$schema``, ``propertyNames``, Codex's ``encrypted`` …) with a 400
#: for the whole request ("Invalid JSON payload received. Unknown name … Cannot find field.";
#: brainlid/langchain PR #599, router-for-me/CLIProxyAPI#97). ``parametersJsonSchema`` (a
#: ``google.protobuf.Value``) takes JSON Schema as is and is mutually exclusive with
#: ``parameters`` (FunctionDeclaration reference: generativelanguage v1beta, Vertex AI v1 and
#: v1beta1; recorded 200s with ``additionalProperties`` in it:
#: pydantic-ai-vertex-gemini3-flash-function-call-signature, pydantic-ai-gemini3-*).
PARAMETERS = "parametersJsonSchema"
# llm-gemini replays snake_case keys and the API accepted them (fixtures SOURCES.md, obs. 3).
FC_SNAKE = "function_call"

# The documented dummy that lets Gemini 3 accept a function call it did not sign
# (https://ai.google.dev/gemini-api/docs/thought-signatures).
DUMMY_SIGNATURE = "skip_thought_signature_validator"
#: The verdict carrier a route that rejects the dummy learns (``Verdict.drop``).
DUMMY_CARRIER = "gemini.dummy_signature"

#: Prefix of tool-call ids thoughtline made up because the response had none (AI Studio
#: gemini-3-flash-preview returns no ``functionCall.id``; SOURCES.md obs.): never sent back.
SYNTHETIC_ID = "gemini_tl_"


def text_of(value: Any) -> str:
    """``value`` when it is a string, else ""."""
    return value if isinstance(value, str) else ""
