"""Encode a request for a Gemini route: every signature back on the part it came on, or none.

Rules (ai.google.dev/gemini-api/docs/thought-signatures; the Vertex thought-signatures page):

- a turn Gemini made, in scope for the target (``plan.may_replay``) and with none of its
  signatures rejected before, goes back whole: thought parts, text, function calls and unknown
  parts, each signature verbatim on its own part — "send the full context or omit it entirely";
- any other assistant turn (another provider's, another tier's, an interrupted one, one with a
  rejected signature) goes back with no thoughts and no signatures at all; its first function call
  of the step carries the documented dummy signature, or — once the route rejected the dummy —
  its calls and their results travel as plain text;
- tool results answer their call by name (and by id when Gemini issued one);
- no part goes without data: "A ``Part`` must contain one of the accepted types in
  ``Part.data``" (the ``Content`` reference,
  docs.cloud.google.com/gemini-enterprise-agent-platform/reference/rest/Shared.Types/Content), and
  an empty ``text`` is none ("required oneof field 'data' must have one initialized field":
  router-for-me/CLIProxyAPI#3485, kittors/CliRelay#264). An unsigned empty text or thought stays
  home; a signed one is Gemini's streamed tail and goes back as received. A model turn left with
  nothing (only other APIs' items with no readable form, such as Codex's ``configuration_update``,
  or another provider's reasoning alone) is no content, as Chat, Anthropic and Bedrock leave it;
- each tool's JSON Schema goes verbatim (key order kept) as ``parametersJsonSchema``, never
  ``parameters`` (``wire.PARAMETERS``: the OpenAPI subset 400s on JSON Schema keywords).

Each function here encodes one turn, or the body around the turns; ``turns`` walks a history
with them (the core's wire cache stores each turn's bytes under the context they depend on).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from thoughtline.codecs import foreign
from thoughtline.codecs.base import profile_of
from thoughtline.codecs.common import merge_params
from thoughtline.codecs.gemini.profile import GeminiProfile
from thoughtline.codecs.gemini.wire import (
    API,
    DUMMY_SIGNATURE,
    FC,
    FR,
    NS,
    PARAMETERS,
    SIG,
    SYNTHETIC_ID,
    THOUGHT,
)
from thoughtline.messages import (
    Message,
    Opaque,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    fingerprint,
)
from thoughtline.replay import ReplayPlan

#: Session setting (``ModelConfig.settings["gemini"]``) learned from a missing-signature 400 on a
#: call of Gemini's own turn: every unsigned call then carries the dummy, not only the first.
SIGN_EVERY_CALL = "sign_every_call"

_BODY_KEYS = frozenset({"generationConfig", "safetySettings", "toolConfig", "cachedContent",
                        "labels"})
#: The body fields request_body writes itself (the model is in the URL): a param naming one is
#: left out. Only ``_BODY_KEYS`` are merged raw, so this guards what ``generationConfig`` may
#: hold: the request for thoughts is the codec's (it is how reasoning comes back).
OWNED = frozenset({"contents", "systemInstruction", "tools",
                   "generationConfig.thinkingConfig.includeThoughts"})
_GENERATION = {"max_tokens": "maxOutputTokens", "max_output_tokens": "maxOutputTokens",
               "temperature": "temperature", "top_p": "topP", "top_k": "topK",
               "stop": "stopSequences", "seed": "seed", "thinking_budget": "thinkingBudget",
               "thinking_level": "thinkingLevel"}
_BUDGETS = {"minimal": 0, "low": 1024, "medium": 8192, "high": 24576}


def sign_every_of(settings: Mapping[str, Any] | None) -> bool:
    return bool((settings or {}).get(SIGN_EVERY_CALL, False))


def signatures_of(message: Message) -> list[str]:
    """Every Gemini signature a turn holds, in part order."""
    out = []
    for part in message.parts:
        if isinstance(part, ToolResult):  # the one part with no native record
            continue
        record = part.native.get(NS) if part.native else None
        if record is not None and isinstance(record.get(SIG), str):
            out.append(record[SIG])
    return out


def own_turn(message: Message, plan: ReplayPlan) -> bool:
    """May this turn go back whole, signatures and thoughts included?"""
    origin = message.origin
    if origin is None or origin.api != API or message.incomplete or message.damaged:
        return False
    if not plan.may_replay(origin):
        return False
    if not plan.fingerprints:
        return True
    return not any(plan.rejected(fingerprint(SIG, s)) for s in signatures_of(message))


def args_object(arguments: str) -> Any:
    """Tool-call arguments as the object ``functionCall.args`` needs.

    Gemini's own calls round-trip exactly (compact JSON of the object received); another
    provider's text that is not a JSON object is wrapped so the model still sees it.
    """
    try:
        value = orjson.loads(arguments) if arguments.strip() else {}
    except orjson.JSONDecodeError:
        return {"input": arguments}
    return value if isinstance(value, dict) else {"input": value}


def _signed(part: dict[str, Any], native: Mapping[str, Any]) -> dict[str, Any]:
    record = native.get(NS)
    if record is not None and isinstance(record.get(SIG), str):
        part[SIG] = record[SIG]
    return part


def _call(call: ToolCall) -> dict[str, Any]:
    wire: dict[str, Any] = {"name": call.name, "args": args_object(call.arguments)}
    if call.id and not call.id.startswith(SYNTHETIC_ID):
        wire["id"] = call.id
    return wire


def _said(part: dict[str, Any]) -> bool:
    """Does a text or thought part hold data? Not an empty one without a signature."""
    return bool(part["text"]) or SIG in part


def _own_parts(message: Message, sign_every: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, Reasoning):
            wire = _signed({"text": part.summary or part.text or "", THOUGHT: True}, part.native)
            if _said(wire):
                parts.append(wire)
        elif isinstance(part, Text):
            wire = _signed({"text": part.text}, part.native)
            if _said(wire):
                parts.append(wire)
        elif isinstance(part, ToolCall):
            wire = _signed({FC: _call(part)}, part.native)
            if sign_every and SIG not in wire:
                wire[SIG] = DUMMY_SIGNATURE
            parts.append(wire)
        elif isinstance(part, Opaque) and part.namespace == NS:
            parts.append(part.native[NS])
    return parts


def call_as_text(call: ToolCall) -> str:
    return f"[called tool {call.name} with arguments {call.arguments or '{}'}]"


def _foreign_parts(message: Message, profile: GeminiProfile,
                   sign_every: bool) -> list[dict[str, Any]]:
    # Interrupted turns lose their calls: they never ran and may be cut mid-arguments.
    calls = () if message.incomplete else message.tool_calls
    parts: list[dict[str, Any]] = []
    text = foreign.shown(message, NS).text  # another API's blocks as their readable text
    if text:
        parts.append({"text": text})
    for index, call in enumerate(calls):
        if profile.foreign_calls == "text":
            parts.append({"text": call_as_text(call)})
            continue
        wire: dict[str, Any] = {FC: _call(call)}
        # Only the first call of a step needs one (the thought-signatures page).
        if index == 0 or sign_every:
            wire[SIG] = DUMMY_SIGNATURE
        parts.append(wire)
    return parts


def model_turn(message: Message, plan: ReplayPlan,
               sign_every: bool) -> tuple[dict[str, Any] | None, bool]:
    """A model turn's ``contents`` entry (None: it has nothing to send), and whether it went
    back whole (``own_turn``)."""
    own = own_turn(message, plan)
    if own:
        parts = _own_parts(message, sign_every)
    else:
        parts = _foreign_parts(message, profile_of(plan, GeminiProfile), sign_every)
    return ({"role": "model", "parts": parts} if parts else None), own


def user_turn(message: Message,
              answering: Mapping[str, tuple[str, bool]]) -> dict[str, Any] | None:
    """A user or tool turn's ``contents`` entry (None: it has nothing to send). ``answering``:
    call id -> (the call's name, sent as text), for the calls its results answer; a result for
    a call not in it answers by the id itself, as a function response."""
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, Text) and part.text:
            parts.append({"text": part.text})
        elif isinstance(part, ToolResult):
            name, as_text = answering.get(part.call_id, (part.call_id, False))
            parts.append(_result(part, name, as_text))
    return {"role": "user", "parts": parts} if parts else None


def _result(result: ToolResult, name: str, as_text: bool) -> dict[str, Any]:
    if as_text:
        label = "error" if result.is_error else "result"
        return {"text": f"[{label} of tool {name}: {result.content}]"}
    response = {"error" if result.is_error else "output": result.content}
    wire: dict[str, Any] = {"name": name, "response": response}
    if result.call_id and not result.call_id.startswith(SYNTHETIC_ID):
        wire["id"] = result.call_id
    return {FR: wire}


def system_parts(message: Message) -> list[dict[str, Any]]:
    """A system turn's parts in ``systemInstruction`` (it is not one of the contents)."""
    return [{"text": p.text} for p in message.parts if isinstance(p, Text) and p.text]


def encode_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    declarations = [{"name": t.name, "description": t.description,
                     PARAMETERS: dict(t.parameters)} for t in tools]
    return [{"functionDeclarations": declarations}]


def generation_config(profile: GeminiProfile, model: str,
                      params: Mapping[str, Any]) -> dict[str, Any]:
    """``generationConfig`` from the route and the neutral parameters (``max_tokens`` …)."""
    config: dict[str, Any] = {}
    thinking: dict[str, Any] = {}
    if profile.thinks(model):
        thinking["includeThoughts"] = True
    for name, value in params.items():
        wire = _GENERATION.get(name)
        if wire in ("thinkingBudget", "thinkingLevel"):
            thinking[wire] = value
        elif wire == "stopSequences":
            config[wire] = [value] if isinstance(value, str) else list(value)
        elif wire is not None:
            config[wire] = value
    effort = params.get("reasoning_effort")
    if isinstance(effort, str) and effort and profile.thinks(model):
        # Gemini 3 takes a level; 2.5 a token budget (ai.google.dev/gemini-api/docs/thinking).
        if "gemini-2" in model.lower():
            thinking.setdefault("thinkingBudget", _BUDGETS.get(effort.lower(), 8192))
        else:
            thinking.setdefault("thinkingLevel", effort.lower())
    if thinking:
        config["thinkingConfig"] = thinking
    return config


def request_body(contents: list[Any], system: list[Any], plan: ReplayPlan, *, model: str,
                 tools: Sequence[ToolSpec] = (),
                 params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The request body around ``contents`` and the system parts (shared, never edited)."""
    params = params or {}
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": system}
    if tools:
        body["tools"] = encode_tools(tools)
    config = generation_config(profile_of(plan, GeminiProfile), model, params)
    if config:
        body["generationConfig"] = config
    extra = {name: value for name, value in params.items()
             if name in _BODY_KEYS and value is not None}
    if extra:
        merge_params(body, extra, OWNED)
    return body


def body_extras(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The caller's top-level body keys the request carried (``generationConfig`` …)."""
    return tuple(sorted(k for k in body if k in _BODY_KEYS))
