"""What the loopback Interactions service refuses, with the real Gemini wordings where known.

Rules and their sources:
- the body is a ``CreateModelInteractionParam`` (google-genai 3.6.1): ``model`` a string,
  ``input`` a string or a list of steps, ``store`` a boolean; an unknown top-level field or step
  type is refused (a route never receives a field it does not read);
- a ``thought`` step's ``signature`` must be one this service issued for that thought's summary:
  AI Studio answers ``Corrupted thought signature.`` and Vertex ``Unable to submit request because
  Thought signature is not valid.. Learn more: …`` (google-gemini/gemini-cli#13467,
  decolua/9router#301);
- ``previous_interaction_id`` must name an interaction stored here (``store`` true, the default:
  ai.google.dev/gemini-api/docs/interactions). The 404 wording ``Interaction not found: {id}`` is
  this emulator's own (UNVERIFIED: no recorded wording; Google APIs answer a missing resource with
  404 NOT_FOUND).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from thoughtline.testing.signing import Signer

_TOP = frozenset({"model", "input", "store", "previous_interaction_id", "system_instruction",
                  "tools", "stream", "generation_config", "response_modalities",
                  "safety_settings", "service_tier", "response_format", "response_mime_type"})
_STEPS = frozenset({"user_input", "thought", "model_output", "function_call", "function_result"})
_VERTEX_INVALID = ("Unable to submit request because Thought signature is not valid.. Learn "
                   "more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/"
                   "gemini")


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    body: Mapping[str, Any]


def error(status: int, message: str, code_name: str = "INVALID_ARGUMENT") -> Refusal:
    return Refusal(status, {"error": {"code": status, "message": message, "status": code_name}})


def summary_text(step: Mapping[str, Any]) -> str:
    summary = step.get("summary")
    if not isinstance(summary, list):
        return ""
    return "".join(s.get("text", "") for s in summary
                   if isinstance(s, Mapping) and s.get("type") == "text")


def steps_of(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "user_input", "content": [{"type": "text", "text": raw}]}]
    return list(raw) if isinstance(raw, list) else []


def check(body: Any, *, signer: Signer, vertex: bool,
          stored: Mapping[str, list[Mapping[str, Any]]]) -> Refusal | None:
    if not isinstance(body, Mapping):
        return error(400, "Invalid JSON payload received.")
    unknown = sorted(set(body) - _TOP)
    if unknown:
        return error(400, f"Invalid JSON payload received. Unknown name \"{unknown[0]}\": "
                          "Cannot find field.")
    if not isinstance(body.get("model"), str) or not body["model"]:
        return error(400, "model is required.")
    if "store" in body and not isinstance(body["store"], bool):
        return error(400, "Invalid value at 'store' (TYPE_BOOL).")
    if not isinstance(body.get("input"), str | list):
        return error(400, "input is required.")
    for i, step in enumerate(steps_of(body)):
        if not isinstance(step, Mapping) or step.get("type") not in _STEPS:
            return error(400, f"Invalid value at 'input[{i}].type'.")
        if step["type"] == "thought" and not signer.verify(
                "gemini-signature", step.get("signature"), summary_text(step)):
            return (error(400, _VERTEX_INVALID) if vertex
                    else error(400, "Corrupted thought signature."))
    previous = body.get("previous_interaction_id")
    if previous is not None and previous not in stored:
        return error(404, f"Interaction not found: {previous}", "NOT_FOUND")
    return None
