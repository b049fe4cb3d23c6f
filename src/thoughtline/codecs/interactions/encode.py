"""Encode a canonical history as an Interactions request (``CreateModelInteractionParam``).

Each message becomes input steps (google-genai 3.6.1 ``StepParam``): a user's text a
``user_input`` step, tool results ``function_result`` steps, an answer's thinking ``thought``
steps (``signature`` byte for byte, ``summary`` as ``TextContent``), its text one
``model_output`` step per run of text, its calls ``function_call`` steps (``arguments`` an
object). System messages become ``system_instruction``. A thought whose signature is out of the
route's scope, cut short, or once rejected is left out (Vertex thought-signatures page: "send the
full context or omit it"; an incompatible signature is never sent).

With server-side state (``store: true``, the default) the request continues the stored chain when
it still matches (``chain.link``) and sends only what came after; otherwise the whole history.

A turn's steps depend on the turn and the plan only, so the API's turn encoder (``TURNS``) is
flat: the core's wire cache stores each turn's steps and splices them. What decides where the
chain continues is read from each turn's facts (``Said``: what it says, its stamp, its origin),
so a resumed history links without being decoded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from thoughtline.codecs import foreign
from thoughtline.codecs.base import (
    Context,
    Encoded,
    Named,
    RequestSpec,
    TurnFacts,
    Walk,
    profile_of,
)
from thoughtline.codecs.common import merge_params
from thoughtline.codecs.interactions import chain
from thoughtline.codecs.interactions.chain import Turn  # (``Said.chain`` hides the module)
from thoughtline.codecs.interactions.profile import InteractionsProfile
from thoughtline.codecs.interactions.wire import API, CALL, OUTPUT, RESULT, SIG, THOUGHT, USER
from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
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
    return bool(profile_of(plan, InteractionsProfile).store)


_ORIGIN = ("api", "provider", "host", "model", "account", "region")  # ``Said.origin``


@dataclass(frozen=True, slots=True)
class Said(Named):
    """An Interactions turn's own facts (``TurnFacts.extra``): the digest of what it says (its
    link in the chain), and an answer's stamp and origin (may the chain continue from it?)."""

    said: str = ""
    interaction: str = ""
    chain: str = ""
    #: An answer's origin: (api, provider, host, model, account, region).
    origin: tuple[str, ...] = ()

    def turn(self, role: str) -> Turn:
        stamp = (self.interaction, self.chain) if self.interaction and self.chain else None
        origin = Origin(**dict(zip(_ORIGIN, self.origin, strict=True))) if len(
            self.origin) == len(_ORIGIN) else None
        return Turn(role=role, said=bytes.fromhex(self.said), stamp=stamp, origin=origin)


@dataclass(frozen=True, slots=True)
class Steps(Named):
    """A turn's steps as the log and a rejection count them (its after facts)."""

    model_turn: bool = False
    thoughts: int = 0
    signatures: tuple[str, ...] = ()


NO_STEPS = Steps()


@dataclass(frozen=True, slots=True)
class Linked:
    """Where a request stands on the server's chain (the walk's state, the same for every turn):
    sent from ``start``, continuing ``previous`` (or why not), and the digest of the whole
    history its answer will follow."""

    store: bool
    start: int = 0
    previous: str = ""
    fallback: str = ""
    digest: str = ""


class InteractionsTurns:
    """The Interactions ``TurnEncoder``: a turn is its input steps (a system turn: its text)."""

    version = "interactions-1"
    flat = True
    extra_type = Said
    after_type = Steps

    def facts(self, message: Message) -> TurnFacts:
        stamp = chain.stamp_of(message)
        o = message.origin if message.role == "assistant" else None
        return TurnFacts.of(message, Said(
            said=chain.said(message).hex(), interaction=stamp[0] if stamp else "",
            chain=stamp[1] if stamp else "",
            origin=(o.api, o.provider, o.host, o.model, o.account, o.region) if o else ()))

    def start(self, plan: ReplayPlan, spec: RequestSpec, facts: Sequence[TurnFacts]) -> Linked:
        if not store_of(plan, spec.params):
            return Linked(store=False)
        turns = [f.extra.turn(f.role) for f in facts if isinstance(f.extra, Said)]
        if len(turns) != len(facts):
            raise ValueError("an Interactions turn without its facts")
        gone = plan.settings.get(chain.GONE, "")
        found = chain.link(turns, model=spec.model, may_replay=plan.may_replay,
                           gone=gone if isinstance(gone, str) else "")
        digest = chain.folded([t.said for t in turns])[-1].hex() if turns else ""
        return Linked(store=True, start=found.start, previous=found.previous,
                      fallback=found.reason, digest=digest)

    def context(self, state: Linked, index: int, facts: TurnFacts) -> Context:
        return ""

    def encode_turn(self, message: Message, plan: ReplayPlan,
                    context: Context) -> tuple[bytes, Steps]:
        if message.role == "system":
            return (orjson.dumps(message.text) if message.text else b""), NO_STEPS
        sent = Sent()
        steps = _steps(message, plan, sent)
        after = Steps(model_turn=bool(sent.model_turns), thoughts=sent.thoughts,
                      signatures=tuple(sent.signatures)) if sent.model_turns else NO_STEPS
        return orjson.dumps(steps)[1:-1], after

    def state_json(self, state: Linked) -> list[Any]:
        return [state.store, state.start, state.previous, state.fallback, state.digest]

    def state_of(self, value: Any) -> Linked:
        store, start, previous, fallback, digest = value
        return Linked(store=bool(store), start=int(start), previous=str(previous),
                      fallback=str(fallback), digest=str(digest))

    def advance(self, state: Linked, facts: TurnFacts, context: Context,
                after: Steps) -> Linked:
        return state

    def assemble(self, walk: Walk[Linked, Steps], spec: RequestSpec,
                 plan: ReplayPlan) -> Encoded:
        state = walk.state
        sent = Sent(store=state.store, previous=state.previous, fallback=state.fallback,
                    digest=state.digest)
        system: list[str] = []
        steps: list[Any] = []
        for index, data in enumerate(walk.turns):
            if walk.facts[index].role == "system":
                if data:
                    system.append(orjson.loads(data))
                continue
            if index < state.start:
                continue
            after = walk.afters[index]
            if after is not NO_STEPS:
                sent.model_turns += after.model_turn
                sent.thoughts += after.thoughts
                sent.signatures.extend(after.signatures)
            if data:
                steps.append(orjson.Fragment(data))
        body: dict[str, Any] = {"model": spec.model, "input": steps, "store": sent.store}
        if sent.previous:
            body["previous_interaction_id"] = sent.previous
        if system:
            body["system_instruction"] = "\n\n".join(system)
        if spec.tools:
            body["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                              "parameters": dict(t.parameters)} for t in spec.tools]
        if spec.stream:
            body["stream"] = True
        extra = {k: v for k, v in spec.params.items() if k != "store"}
        merge_params(body, extra, OWNED)
        sent.extras = tuple(sorted(k for k in body if k not in OWNED and k != "store"))
        return Encoded(raw=orjson.dumps(body), index=sent)


TURNS = InteractionsTurns()


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
    message = foreign.shown(message, API)  # another API's blocks as their readable text
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
