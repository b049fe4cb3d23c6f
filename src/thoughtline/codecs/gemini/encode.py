"""Encode a request for a Gemini route: every signature back on the part it came on, or none.

Rules (provider-contracts §6, provider-updates §1b):

- a turn Gemini made, in scope for the target (``plan.may_replay``) and with none of its
  signatures rejected before, goes back whole: thought parts, text, function calls and unknown
  parts, each signature verbatim on its own part — "send the full context or omit it entirely";
- any other assistant turn (another provider's, another tier's, an interrupted one, one with a
  rejected signature) goes back with no thoughts and no signatures at all; its first function call
  of the step carries the documented dummy signature, or — once the route rejected the dummy —
  its calls and their results travel as plain text;
- tool results answer their call by name (and by id when Gemini issued one).

``WireCache`` keeps each stored turn's wire form per plan: turns are immutable. A resumed history
is spliced from the forms stored with it instead (``forms``), through the same ``Built`` and
``Contents``: results answer calls by ``(name, sent as text)``, whichever way the call was read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs.common import merge_params
from thoughtline.codecs.gemini.profile import GeminiProfile
from thoughtline.codecs.gemini.wire import (
    API,
    DUMMY_SIGNATURE,
    FC,
    FR,
    NS,
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


@dataclass(frozen=True, kw_only=True, slots=True)
class Sent:
    """What one request carried, for ``classify`` and the request log."""

    signatures: tuple[str, ...] = ()
    dummies: int = 0
    thoughts: int = 0
    model_turns: int = 0
    as_text: int = 0
    sign_every: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class Counts:
    """What the request log records about a request: counts only (``summary_of``)."""

    signatures: int = 0
    dummies: int = 0
    thoughts: int = 0
    model_turns: int = 0
    as_text: int = 0


def sign_every_of(settings: Mapping[str, Any] | None) -> bool:
    return bool((settings or {}).get(SIGN_EVERY_CALL, False))


def signatures_of(message: Message) -> list[str]:
    """Every Gemini signature a turn holds, in part order."""
    out = []
    for part in message.parts:
        native = getattr(part, "native", None)
        record = native.get(NS) if native else None
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


def _own_parts(message: Message, sign_every: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, Reasoning):
            parts.append(_signed({"text": part.summary or part.text or "", THOUGHT: True},
                                 part.native))
        elif isinstance(part, Text):
            parts.append(_signed({"text": part.text}, part.native))
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
    text = message.text
    if text:
        parts.append({"text": text})
    for index, call in enumerate(calls):
        if profile.foreign_calls == "text":
            parts.append({"text": call_as_text(call)})
            continue
        wire: dict[str, Any] = {FC: _call(call)}
        if index == 0 or sign_every:  # only the first call of a step needs one (§1b)
            wire[SIG] = DUMMY_SIGNATURE
        parts.append(wire)
    return parts


class Built:
    """The contents built for one history prefix, and what they carried (extended in place).

    ``contents`` and ``system`` may hold ``orjson.Fragment`` values (turns spliced from their
    stored wire forms, ``forms``); the signatures of those turns are known by count only.
    """

    __slots__ = ("calls", "contents", "counts", "signatures", "system")

    def __init__(self) -> None:
        self.contents: list[Any] = []
        self.system: list[Any] = []
        self.signatures: list[str] = []
        # signatures known by count only, dummies, thoughts, model turns, calls sent as text
        self.counts = [0, 0, 0, 0, 0]
        self.calls: dict[str, tuple[str, bool]] = {}  # call id -> (name, sent as text)

    def copy(self) -> Built:
        other = Built()
        other.contents, other.system = self.contents.copy(), self.system.copy()
        other.signatures, other.counts = self.signatures.copy(), self.counts.copy()
        other.calls = self.calls.copy()
        return other

    def sent(self, sign_every: bool) -> Sent:
        _, dummies, thoughts, turns, as_text = self.counts
        return Sent(signatures=tuple(self.signatures), dummies=dummies, thoughts=thoughts,
                    model_turns=turns, as_text=as_text, sign_every=sign_every)

    def tally(self) -> Counts:
        """The request log's counts (``summary_of``)."""
        stored, dummies, thoughts, turns, as_text = self.counts
        return Counts(signatures=stored + len(self.signatures), dummies=dummies,
                      thoughts=thoughts, model_turns=turns, as_text=as_text)


class WireCache:
    """Each stored turn's wire content per plan, derived once (turns are immutable).

    Per plan it also keeps the last history it encoded and what that built: a history that only
    grew since (one turn per request, the normal case) reuses it and encodes just the new turns.
    Equal messages have equal wire forms, so a prefix that compares equal is safe to reuse.
    A resumed history is spliced from its stored forms instead (``forms``), which keeps here,
    per plan, what it built from them and the plan's digest.
    """

    def __init__(self) -> None:
        self._turns: dict[tuple[int, int], tuple[Message, dict[str, Any], Sent, bool]] = {}
        self._last: dict[Any, tuple[list[Message], Built]] = {}
        self._tokens: dict[Any, int] = {}
        #: plan key -> (the stored history spliced, how many turns it stores, what they built)
        self.spliced: dict[Any, tuple[Any, int, Built]] = {}
        self.digests: dict[Any, str] = {}

    def token(self, key: Any) -> int:
        """A small int standing for a plan key (hashed once per request, not once per turn)."""
        return self._tokens.setdefault(key, len(self._tokens))

    def turn(self, message: Message, key: int,
             build: Any) -> tuple[dict[str, Any], Sent, bool]:
        hit = self._turns.get((id(message), key))
        if hit is not None and hit[0] is message:
            return hit[1], hit[2], hit[3]
        wire, sent, own = build()
        self._turns[(id(message), key)] = (message, wire, sent, own)
        return wire, sent, own

    def resume(self, key: Any, turns: list[Message]) -> tuple[int, Built]:
        last = self._last.get(key)
        if last is not None and len(last[0]) <= len(turns) and turns[:len(last[0])] == last[0]:
            return len(last[0]), last[1].copy()
        return 0, Built()

    def remember(self, key: Any, turns: list[Message], built: Built) -> None:
        self._last[key] = (turns, built)

    def __len__(self) -> int:
        return len(self._turns)


class Contents:
    """Encodes one turn at a time into a ``Built``: names calls so results can answer them."""

    def __init__(self, plan: ReplayPlan, sign_every: bool, built: Built) -> None:
        self.plan = plan
        self.profile: GeminiProfile = plan.profile
        self.sign_every = sign_every
        self.built = built

    def model_turn(self, message: Message) -> tuple[dict[str, Any], Sent, bool]:
        own = own_turn(message, self.plan)
        if own:
            parts = _own_parts(message, self.sign_every)
            sent = Sent(signatures=tuple(p[SIG] for p in parts if SIG in p), model_turns=1,
                        thoughts=sum(1 for p in parts if p.get(THOUGHT) is True))
        else:
            parts = _foreign_parts(message, self.profile, self.sign_every)
            dummies = sum(1 for p in parts if p.get(SIG) == DUMMY_SIGNATURE)
            as_text = len(message.tool_calls) if self.profile.foreign_calls == "text" else 0
            sent = Sent(dummies=dummies, model_turns=1, as_text=as_text)
        return {"role": "model", "parts": parts or [{"text": ""}]}, sent, own

    def add(self, message: Message, key: int, cache: WireCache | None) -> None:
        built = self.built
        if message.role == "system":
            built.system.extend(system_parts(message))
            return
        if message.role != "assistant":
            wire = self.user_turn(message)
            if wire is not None:
                built.contents.append(wire)
            return
        if cache is not None:
            wire, sent, own = cache.turn(message, key, lambda: self.model_turn(message))
        else:
            wire, sent, own = self.model_turn(message)
        built.contents.append(wire)
        built.signatures.extend(sent.signatures)
        self.count(sent)
        self.offer(message, own)

    def count(self, sent: Sent) -> None:
        counts = self.built.counts
        counts[1] += sent.dummies
        counts[2] += sent.thoughts
        counts[3] += sent.model_turns
        counts[4] += sent.as_text

    def offer(self, message: Message, own: bool) -> None:
        """Make a model turn's calls answerable by the results that follow."""
        if not message.incomplete:  # an interrupted turn's calls were never sent
            text_mode = self.profile.foreign_calls == "text" and not own
            calls = self.built.calls
            for call in message.tool_calls:
                calls[call.id] = (call.name, text_mode)

    def answering(self, call_id: str) -> tuple[str, bool]:
        """``(name, as text)`` a result for ``call_id`` is sent with: its call's, found in an
        earlier model turn, or the id itself (sent as a function response) when there is none."""
        return self.built.calls.get(call_id, (call_id, False))

    def user_turn(self, message: Message) -> dict[str, Any] | None:
        parts: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, Text) and part.text:
                parts.append({"text": part.text})
            elif isinstance(part, ToolResult):
                parts.append(self._result(part))
        return {"role": "user", "parts": parts} if parts else None

    def _result(self, result: ToolResult) -> dict[str, Any]:
        name, as_text = self.answering(result.call_id)
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


def encode_contents(history: Sequence[Message], plan: ReplayPlan, *, sign_every: bool = False,
                    cache: WireCache | None = None
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Sent]:
    """``(contents, system parts, what was sent)`` for ``history`` under ``plan``.

    The lists are shared with the cache: serialize them, never edit them.
    """
    key = (plan.key, sign_every)
    turns = list(history)
    start, built = cache.resume(key, turns) if cache is not None else (0, Built())
    builder = Contents(plan, sign_every, built)
    token = cache.token(key) if cache is not None else 0
    for message in turns[start:]:
        builder.add(message, token, cache)
    if cache is not None:
        cache.remember(key, turns, built)
    return built.contents, built.system, built.sent(sign_every)


def encode_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    declarations = [{"name": t.name, "description": t.description,
                     "parameters": dict(t.parameters)} for t in tools]
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
    config = generation_config(plan.profile, model, params)
    if config:
        body["generationConfig"] = config
    extra = {name: value for name, value in params.items()
             if name in _BODY_KEYS and value is not None}
    if extra:
        merge_params(body, extra, OWNED)
    return body


def encode_request(history: Sequence[Message], plan: ReplayPlan, *, model: str,
                   tools: Sequence[ToolSpec] = (), params: Mapping[str, Any] | None = None,
                   settings: Mapping[str, Any] | None = None,
                   cache: WireCache | None = None) -> tuple[dict[str, Any], Sent]:
    """The request body for ``history`` on a Gemini route, and what it carried.

    The body shares read-only native values with the history: serialize it, never edit it.
    """
    contents, system, sent = encode_contents(history, plan, sign_every=sign_every_of(settings),
                                             cache=cache)
    return request_body(contents, system, plan, model=model, tools=tools, params=params), sent


def body_extras(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The caller's top-level body keys the request carried (``generationConfig`` …)."""
    return tuple(sorted(k for k in body if k in _BODY_KEYS))


def counts_of(sent: Sent) -> Counts:
    return Counts(signatures=len(sent.signatures), dummies=sent.dummies, thoughts=sent.thoughts,
                  model_turns=sent.model_turns, as_text=sent.as_text)


def summary_of(counts: Counts, extras: Sequence[str]) -> dict[str, Any]:
    """What the request log records about the reasoning a request carried."""
    return {"assistant_turns": counts.model_turns,
            "carriers": {SIG: counts.signatures} if counts.signatures else {},
            "pads": counts.dummies,
            "native": {"thought": counts.thoughts} if counts.thoughts else {},
            "calls_as_text": counts.as_text, "body_extras": list(extras)}


def summary(sent: Sent, body: Mapping[str, Any]) -> dict[str, Any]:
    """``summary_of`` a request encoded from decoded turns."""
    return summary_of(counts_of(sent), body_extras(body))
