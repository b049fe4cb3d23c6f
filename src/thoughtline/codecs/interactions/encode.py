"""Encode a canonical history as an Interactions request (``CreateModelInteractionParam``).

Each message becomes input steps (google-genai 3.6.1 ``StepParam``): a user's text a
``user_input`` step, tool results ``function_result`` steps, an answer's thinking ``thought``
steps (``signature`` byte for byte, ``summary`` as ``TextContent``), its text one
``model_output`` step per run of text, its calls ``function_call`` steps (``arguments`` an
object). System messages become ``system_instruction``. A thought whose signature is out of the
route's scope, cut short, or once rejected is left out (provider-updates §1b: "send the full
context or omit it"; an incompatible signature is never sent).

With server-side state (``store: true``, the default) the request continues the stored chain when
it still matches (``chain.link``) and sends only what came after; otherwise the whole history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from thoughtline.codecs.common import merge_params
from thoughtline.codecs.interactions import chain
from thoughtline.codecs.interactions.wire import CALL, OUTPUT, RESULT, SIG, THOUGHT, USER
from thoughtline.messages import (
    Message,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    fingerprint,
)
from thoughtline.replay import ReplayPlan

OWNED = frozenset({"model", "input", "previous_interaction_id", "system_instruction",
                   "tools", "stream"})


@dataclass(kw_only=True, slots=True)
class Sent:
    """What a request carried, for the log, the stamp and the reading of a rejection."""

    #: The thought signatures sent, in order (fingerprinted when the server rejects them).
    signatures: list[str] = field(default_factory=list)
    thoughts: int = 0
    model_turns: int = 0
    store: bool = True
    previous: str = ""
    #: Why a stored chain was not continued ("" when it was, or there was none).
    fallback: str = ""
    #: The digest of the whole history the answer will follow (hex), "" when not stored.
    digest: str = ""
    extras: tuple[str, ...] = ()


def store_of(plan: ReplayPlan, params: Mapping[str, Any]) -> bool:
    """``store`` from the request params (``store = false``), else the route's default."""
    value = params.get("store")
    if isinstance(value, bool):
        return value
    return bool(plan.profile.store)


def encode_request(history: Sequence[Message], plan: ReplayPlan, *, model: str,
                   tools: Sequence[ToolSpec] = (), params: Mapping[str, Any] | None = None,
                   stream: bool = False) -> tuple[dict[str, Any], Sent]:
    params = params or {}
    sent = Sent(store=store_of(plan, params))
    start = 0
    if sent.store:
        gone = plan.settings.get(chain.GONE, "")
        found = chain.link(history, model=model, may_replay=plan.may_replay,
                           gone=gone if isinstance(gone, str) else "")
        sent.previous, start, sent.fallback = found.previous, found.start, found.reason
        sent.digest = chain.running(history)[-1].hex() if history else ""
    system = [m.text for m in history if m.role == "system" and m.text]
    steps: list[dict[str, Any]] = []
    for message in history[start:]:
        if message.role != "system":
            steps.extend(_steps(message, plan, sent))
    body: dict[str, Any] = {"model": model, "input": steps, "store": sent.store}
    if sent.previous:
        body["previous_interaction_id"] = sent.previous
    if system:
        body["system_instruction"] = "\n\n".join(system)
    if tools:
        body["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                          "parameters": dict(t.parameters)} for t in tools]
    if stream:
        body["stream"] = True
    extra = {k: v for k, v in params.items() if k != "store"}
    merge_params(body, extra, OWNED)
    sent.extras = tuple(sorted(k for k in body if k not in OWNED and k != "store"))
    return body, sent


def _steps(message: Message, plan: ReplayPlan, sent: Sent) -> list[dict[str, Any]]:
    if message.role == "assistant":
        sent.model_turns += 1
        return _answer(message, plan, sent)
    steps: list[dict[str, Any]] = []
    text = [{"type": "text", "text": p.text} for p in message.parts
            if isinstance(p, Text) and p.text]
    if text:
        steps.append({"type": USER, "content": text})
    for part in message.parts:
        if isinstance(part, ToolResult):
            result: dict[str, Any] = {"type": RESULT, "call_id": part.call_id,
                                      "result": part.content}
            if part.is_error:
                result["is_error"] = True
            steps.append(result)
    return steps


def _answer(message: Message, plan: ReplayPlan, sent: Sent) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, Reasoning):
            step = _thought(part, plan)
            if step is not None:
                steps.append(step)
                sent.thoughts += 1
                sent.signatures.append(step["signature"])
        elif isinstance(part, Text):
            if not part.text:
                continue
            if steps and steps[-1]["type"] == OUTPUT:
                steps[-1]["content"].append({"type": "text", "text": part.text})
            else:
                steps.append({"type": OUTPUT, "content": [{"type": "text", "text": part.text}]})
        elif isinstance(part, ToolCall):
            steps.append({"type": CALL, "id": part.id, "name": part.name,
                          "arguments": _arguments(part.arguments)})
    return steps


def _thought(part: Reasoning, plan: ReplayPlan) -> dict[str, Any] | None:
    signature = part.signature
    if (not signature or not part.complete or not plan.may_replay(part.origin)
            or plan.rejected(fingerprint(SIG, signature))):
        return None
    step: dict[str, Any] = {"type": THOUGHT, "signature": signature}
    if part.summary:
        step["summary"] = [{"type": "text", "text": part.summary}]
    return step


def _arguments(text: str) -> Any:
    try:
        value = orjson.loads(text) if text.strip() else {}
    except orjson.JSONDecodeError:
        return {"arguments": text}  # a call whose arguments never were JSON: sent as a string
    return value if isinstance(value, dict) else {"value": value}


def summary(sent: Sent) -> dict[str, Any]:
    """What the request log records: reasoning carried and how the server's state was used."""
    if not sent.store:
        state = "stateless"
    elif sent.previous:
        state = "continued"
    elif sent.fallback:
        state = "fallback"
    else:
        state = "new"
    out: dict[str, Any] = {
        "assistant_turns": sent.model_turns,
        "carriers": {SIG: len(sent.signatures)} if sent.signatures else {},
        "native": {"thought": sent.thoughts} if sent.thoughts else {}, "pads": 0,
        "body_extras": list(sent.extras), "state": state}
    if sent.fallback:
        out["state_note"] = (f"sent the whole history instead of continuing the stored chain: "
                             f"{sent.fallback}")
    return out
