"""What the loopback Interactions service answers, whole and streamed.

Every answer is one ``thought`` step (a summary and a signature this service issued for it:
ai.google.dev/gemini-api/docs/interactions/thinking: "always present") followed by a
``model_output`` step — or, when tools were given and the newest input is the user's, a
``function_call`` step (status ``requires_action``). The text says how many thought steps the model
had in its context (stored chain plus input), so a test sees what the model saw. Streams are SSE
``data:`` lines discriminated by ``event_type`` (google-genai 3.6.1 ``InteractionSSEEvent``):
``interaction.created``, ``step.start``/``step.delta``/``step.stop`` (``thought_summary``,
``thought_signature``, ``text``, ``arguments_delta`` deltas) and ``interaction.completed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from thoughtline.testing.interactions_rules import steps_of
from thoughtline.testing.signing import Signer


def _asks_for_tool(body: Mapping[str, Any]) -> str | None:
    tools = body.get("tools")
    steps = steps_of(body)
    if not tools or not steps or steps[-1].get("type") != "user_input":
        return None
    return "".join(c.get("text", "") for c in steps[-1].get("content", []))


def output_steps(body: Mapping[str, Any], context: Sequence[Mapping[str, Any]], n: int,
                 signer: Signer) -> tuple[list[dict[str, Any]], str]:
    """The answer's steps and its status, for request number ``n``."""
    summary = f"Considering request {n}."
    steps: list[dict[str, Any]] = [{
        "type": "thought", "signature": signer.issue("gemini-signature", summary),
        "summary": [{"type": "text", "text": summary}]}]
    asked = _asks_for_tool(body)
    if asked is not None:
        name = body["tools"][0].get("name", "tool")
        steps.append({"type": "function_call", "id": f"call_{n}", "name": name,
                      "arguments": {"q": asked}})
        return steps, "requires_action"
    seen = sum(1 for s in context if s.get("type") == "thought")
    steps.append({"type": "model_output", "content": [
        {"type": "text", "text": f"reply {n} (thoughts in context: {seen})"}]})
    return steps, "completed"


def usage(raw_size: int) -> dict[str, int]:
    return {"total_input_tokens": max(1, raw_size // 4), "total_output_tokens": 12,
            "total_thought_tokens": 8, "total_tokens": max(1, raw_size // 4) + 20}


def whole(ident: str, model: str, steps: list[dict[str, Any]], status: str,
          body: Mapping[str, Any], raw_size: int) -> dict[str, Any]:
    out: dict[str, Any] = {"id": ident, "model": model, "status": status, "steps": steps,
                           "usage": usage(raw_size)}
    if body.get("previous_interaction_id"):
        out["previous_interaction_id"] = body["previous_interaction_id"]
    return out


def events(ident: str, steps: list[dict[str, Any]], status: str,
           raw_size: int) -> list[dict[str, Any]]:
    """The stream of one answer, as event payloads."""
    out: list[dict[str, Any]] = [
        {"event_type": "interaction.created", "interaction": {"id": ident,
                                                             "status": "in_progress"}}]
    for index, step in enumerate(steps):
        kind = step["type"]
        if kind == "thought":
            out.append({"event_type": "step.start", "index": index, "step": {"type": kind}})
            out.append({"event_type": "step.delta", "index": index, "delta": {
                "type": "thought_summary", "content": step["summary"][0]}})
            out.append({"event_type": "step.delta", "index": index, "delta": {
                "type": "thought_signature", "signature": step["signature"]}})
        elif kind == "model_output":
            out.append({"event_type": "step.start", "index": index, "step": {"type": kind}})
            text = step["content"][0]["text"]
            half = len(text) // 2
            for piece in (text[:half], text[half:]):
                out.append({"event_type": "step.delta", "index": index,
                            "delta": {"type": "text", "text": piece}})
        else:  # function_call: the name and id first, the arguments as JSON text after
            out.append({"event_type": "step.start", "index": index, "step": {
                "type": kind, "id": step["id"], "name": step["name"]}})
            out.append({"event_type": "step.delta", "index": index, "delta": {
                "type": "arguments_delta", "arguments": orjson.dumps(step["arguments"]).decode()}})
        out.append({"event_type": "step.stop", "index": index})
    out.append({"event_type": "interaction.completed", "interaction": {
        "id": ident, "status": status, "usage": usage(raw_size)}})
    return out


def sse(payloads: Sequence[Mapping[str, Any]]) -> list[bytes]:
    return [b"data: " + orjson.dumps(p) + b"\n\n" for p in payloads]
