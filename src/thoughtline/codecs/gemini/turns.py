"""A Gemini request, encoded turn by turn (``codecs.base.TurnEncoder``).

A Gemini turn's bytes are not a function of the turn and the plan alone; its *context* is what
else they depend on, computed from the walk without decoding the turn:

- a model turn: whether every unsigned call carries the dummy (``sign_every_call``, a session
  setting, not part of the plan) — ``"every"`` or ``""``, and ``""`` for a turn with no call
  that can be sent;
- a user or tool turn with tool results: for each result (in part order), the call id it
  answers, the name of that call and whether it went as text — a result answers its call by
  name, found in an earlier model turn, and goes as text when the call did — as JSON text (the
  key its form is stored under);
- a system turn: nothing (its parts go to ``systemInstruction``, not ``contents``: its bytes are
  empty and its texts are in its after facts).

The walk state is the calls made so far (call id -> name, sent as text), filled from each model
turn's after facts (``TurnSent``), which also hold what the request log reads: how many
signatures, dummies, thoughts and calls as text the turn carried. A rejection reads the request
as sent, without encoding it again: those counts, and the signatures themselves from the turns'
bytes (``Sent.prints``).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from thoughtline.codecs.base import (
    Context,
    Encoded,
    Named,
    RequestSpec,
    TurnFacts,
    Walk,
    profile_of,
    sharer,
    turn_bytes,
    with_role,
)
from thoughtline.codecs.gemini.encode import (
    body_extras,
    model_turn,
    request_body,
    sign_every_of,
    system_parts,
    user_turn,
)
from thoughtline.codecs.gemini.profile import GeminiProfile
from thoughtline.codecs.gemini.wire import DUMMY_SIGNATURE, SIG, THOUGHT
from thoughtline.messages import Message, ToolCall, fingerprint
from thoughtline.replay import ReplayPlan

EVERY = "every"  # a model turn's context when every unsigned call carries the dummy


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnSent(Named):
    """What one turn carried (its after facts); all empty for a user, tool or system turn."""

    #: The names of its calls, aligned with ``TurnFacts.calls``, when they can be answered
    #: (the turn was not interrupted).
    names: tuple[str, ...] = ()
    #: Its calls went as text (and so do the results answering them).
    text_mode: bool = False
    #: How many signatures it carried (an own turn's). Their fingerprints, what a rejection
    #: teaches, are read from the turn's bytes when one asks (``Sent.prints``): fingerprinting
    #: every signature of every request it was never asked for cost a cold build about 7%.
    signatures: int = 0
    dummies: int = 0
    thoughts: int = 0
    #: How many of its calls went as text (the request log's count).
    calls_as_text: int = 0
    #: A system turn's texts: its parts go to ``systemInstruction``, not ``contents``, so its
    #: bytes are empty and ``assemble`` reads them from here.
    system: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> TurnSent:
        """``Named.from_json``, field by field, one value per distinct fields (a resume reads
        every stored model turn's that makes calls; a non-object is an ``AttributeError``)."""
        get = raw.get
        names, system = get("names"), get("system")
        sent: TurnSent = _sent_as(tuple(names) if names else (), get("text_mode", False),
                                  get("signatures", 0), get("dummies", 0), get("thoughts", 0),
                                  get("calls_as_text", 0), tuple(system) if system else ())
        return sent


NOTHING = TurnSent()
#: A model turn's after facts, shared by value (a history's model turns repeat a handful).
_sent_as = sharer(TurnSent)


class CallLog:
    """The calls a walk made, in order (call id, name, sent as text), shared by the walk states
    that extend one another: a state sees the first ``upto`` of them, so a state never changes
    when a later one appends (and a state that is not the log's tip branches a copy)."""

    __slots__ = ("earlier", "entries", "latest")

    def __init__(self, entries: Sequence[tuple[str, str, bool]] = ()) -> None:
        self.entries: list[tuple[str, str, bool]] = []
        self.latest: dict[str, int] = {}  # call id -> where it was made last
        #: call id -> where else it was made, ascending (only ids made more than once: most
        #: are made once, and a resume makes one entry per call of a long session)
        self.earlier: dict[str, list[int]] = {}
        self.extend(entries)

    def extend(self, entries: Iterable[tuple[str, str, bool]]) -> None:
        for entry in entries:
            self.add(*entry)

    def add(self, call_id: str, name: str, text: bool) -> None:
        before = self.latest.get(call_id)
        if before is not None:
            self.earlier.setdefault(call_id, []).append(before)
        self.latest[call_id] = len(self.entries)
        self.entries.append((call_id, name, text))

    def answering(self, call_id: str, upto: int) -> tuple[str, bool]:
        """(name, sent as text) of the latest call with this id among the first ``upto`` (the id
        itself, as a function response, when there is none)."""
        at = self.latest.get(call_id)
        if at is not None and at >= upto:  # (made again after them: an earlier making, if any)
            earlier = self.earlier.get(call_id, [])
            found = bisect.bisect_left(earlier, upto) - 1
            at = earlier[found] if found >= 0 else None
        if at is None:
            return call_id, False
        _, name, text = self.entries[at]
        return name, text


class Calls(NamedTuple):
    """The walk state: the calls made so far (the first ``upto`` of ``log``), a result answering
    the latest call with its id; and where the system turns are (their parts go to
    ``systemInstruction``, read from their after facts; known from the start, so ``assemble``
    need not look for them).

    A named tuple, made in one C call (a walk makes one per model turn with calls). States
    compare by all but their log, which the states of one walk share."""

    sign_every: bool
    system: tuple[int, ...]
    upto: int
    log: CallLog

    def __eq__(self, other: object) -> bool:
        return type(other) is Calls and self[:3] == other[:3]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self[:3])


_calls = tuple.__new__  # ``_calls(Calls, (fields in order))``: a state in one C call


@dataclass(frozen=True, kw_only=True, slots=True)
class Totals:
    """What a request's turns carried, added up."""

    signatures: int = 0
    dummies: int = 0
    thoughts: int = 0
    model_turns: int = 0
    as_text: int = 0


class Sent:
    """What a request carried, for ``classify`` and the request log: its turns' after facts,
    added up on first need (a request that is accepted and not logged never adds them up), and
    its turns' bytes, where a rejection reads the signatures it carried."""

    __slots__ = ("_afters", "_facts", "_totals", "_turns", "extras", "sign_every")

    def __init__(self, afters: Sequence[TurnSent], facts: Sequence[TurnFacts],
                 turns: Sequence[bytes], *, sign_every: bool, extras: tuple[str, ...]) -> None:
        self._afters, self._facts, self._turns = afters, facts, turns
        self._totals: Totals | None = None
        self.sign_every, self.extras = sign_every, extras

    @property
    def totals(self) -> Totals:
        if self._totals is None:
            signatures = dummies = thoughts = as_text = 0
            for after in self._afters:
                if after is not NOTHING:
                    signatures += after.signatures
                    dummies += after.dummies
                    thoughts += after.thoughts
                    as_text += after.calls_as_text
            model_turns = sum(1 for f, sent in zip(self._facts, self._turns, strict=True)
                              if f.role == "assistant" and sent)  # (one left out: not sent)
            self._totals = Totals(signatures=signatures, dummies=dummies, thoughts=thoughts,
                                  model_turns=model_turns, as_text=as_text)
        return self._totals

    @property
    def prints(self) -> tuple[str, ...]:
        """The fingerprints of every signature the request carried on Gemini's own turns, in
        order (what an invalid-signature rejection teaches), read from the turns' bytes as
        sent."""
        out: list[str] = []
        for index, after in enumerate(self._afters):
            if after is not NOTHING and after.signatures:
                for part in orjson.loads(self._turns[index])["parts"]:
                    if SIG in part:
                        out.append(fingerprint(SIG, part[SIG]))
        return tuple(out)


class GeminiTurns:
    """The Gemini ``TurnEncoder``."""

    #: Bump when a turn's bytes or its after facts change: older stored forms are not found.
    #: 5: a model turn with nothing to send is no content, and an unsigned empty text or thought
    #: is no part (4 sent them as ``{"text": ""}``).
    version = "gemini-turns-5"
    flat = False
    extra_type = None
    after_type = TurnSent

    #: No extra facts: the neutral ones, called directly (a cold request reads every turn's).
    facts = TurnFacts.of

    def start(self, plan: ReplayPlan, spec: RequestSpec,
              facts: Sequence[TurnFacts]) -> Calls:
        return Calls(sign_every=sign_every_of({**plan.settings, **spec.settings}),
                     system=with_role(facts, "system"), upto=0, log=CallLog())

    def context(self, state: Calls, index: int, facts: TurnFacts) -> Context:
        if facts.role == "assistant":
            return EVERY if state.sign_every and facts.calls and not facts.incomplete else ""
        if facts.role == "system" or not facts.results:
            return ""
        log, upto = state.log, state.upto
        out: list[str | bool] = []
        for call_id in facts.results:
            out.append(call_id)
            out += log.answering(call_id, upto)
        return orjson.dumps(out).decode()

    def encode_turn(self, message: Message, plan: ReplayPlan,
                    context: Context) -> tuple[bytes, TurnSent]:
        if message.role == "system":
            texts = tuple(part["text"] for part in system_parts(message))
            return b"", TurnSent(system=texts) if texts else NOTHING
        if message.role == "assistant":
            return self._model(message, plan, context == EVERY)
        answering: dict[str, tuple[str, bool]] = {}
        if context:  # (call id, name, as text) per result, as ``context`` wrote them
            assert isinstance(context, str), "a Gemini context is a string (``context``)"
            said = orjson.loads(context)
            for at in range(0, len(said), 3):
                answering[str(said[at])] = (str(said[at + 1]), bool(said[at + 2]))
        wire = user_turn(message, answering)
        return (turn_bytes(wire) if wire is not None else b""), NOTHING

    @staticmethod
    def _model(message: Message, plan: ReplayPlan,
               sign_every: bool) -> tuple[bytes, TurnSent]:
        wire, own = model_turn(message, plan, sign_every)
        if wire is None:  # (then it has no call to answer either: a call is always sent)
            return b"", NOTHING
        parts = wire["parts"]
        # An interrupted turn's calls never ran: nothing can answer them.
        names = () if message.incomplete else tuple(
            [p.name for p in message.parts if type(p) is ToolCall])
        if own:
            signatures = thoughts = 0
            for part in parts:
                if SIG in part:
                    signatures += 1
                if part.get(THOUGHT) is True:
                    thoughts += 1
            after = _sent_as(names, False, signatures, 0, thoughts, 0, ())
        else:
            as_text = profile_of(plan, GeminiProfile).foreign_calls == "text"
            calls = sum(1 for p in message.parts if type(p) is ToolCall) if as_text else 0
            after = _sent_as(names, as_text and bool(names), 0,
                             sum(1 for p in parts if p.get(SIG) == DUMMY_SIGNATURE), 0, calls,
                             ())
        return turn_bytes(wire), after

    def state_json(self, state: Calls) -> list[Any]:
        return [state.sign_every, list(state.system), state.upto,
                state.log.entries[:state.upto]]

    def state_of(self, value: Any) -> Calls:
        sign_every, system, upto, entries = value
        log = CallLog([(str(c), str(n), bool(t)) for c, n, t in entries])
        if len(log.entries) != upto:
            raise ValueError("a Gemini walk state logs the calls it has seen")
        return _calls(Calls, (bool(sign_every), tuple(map(int, system)), int(upto), log))

    def advance(self, state: Calls, facts: TurnFacts, context: Context,
                after: TurnSent) -> Calls:
        if not after.names:
            return state
        return _logged(state, facts.calls, after)

    def assemble(self, walk: Walk[Calls, TurnSent], spec: RequestSpec,
                 plan: ReplayPlan) -> Encoded:
        fragments = walk.fragments  # every turn but the system ones (their bytes are empty)
        contents: list[Any] = fragments if isinstance(fragments, list) else list(fragments)
        afters = walk.afters
        system = [{"text": text} for index in walk.state.system for text in afters[index].system]
        body = request_body(contents, system, plan, model=spec.model, tools=spec.tools,
                            params=spec.params)
        index = Sent(walk.afters, walk.facts, walk.turns, sign_every=walk.state.sign_every,
                     extras=body_extras(body))
        return Encoded(raw=orjson.dumps(body), index=index)


TURNS = GeminiTurns()


def _logged(state: Calls, calls: Sequence[str], after: TurnSent) -> Calls:
    """The state after a model turn made ``calls`` (ids), named and sent as its ``after`` facts
    say (``advance``)."""
    names = after.names
    if len(calls) != len(names):
        raise ValueError(f"a model turn's {len(calls)} calls have {len(names)} names")
    log = state.log
    if len(log.entries) != state.upto:  # an earlier state walked on anew: branch the log
        log = CallLog(log.entries[:state.upto])
    if len(calls) == 1:  # (most model turns make one call)
        log.add(calls[0], names[0], after.text_mode)
    else:
        log.extend(zip(calls, names, itertools.repeat(after.text_mode)))
    return _calls(Calls, (state.sign_every, state.system, len(log.entries), log))


def summary(sent: Sent) -> dict[str, Any]:
    """What the request log records about the reasoning a request carried."""
    totals = sent.totals
    signatures = totals.signatures
    return {"assistant_turns": totals.model_turns,
            "carriers": {SIG: signatures} if signatures else {},
            "pads": totals.dummies,
            "native": {"thought": totals.thoughts} if totals.thoughts else {},
            "calls_as_text": totals.as_text, "body_extras": list(sent.extras)}
