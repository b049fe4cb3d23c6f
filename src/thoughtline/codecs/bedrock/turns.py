"""A Converse request, encoded turn by turn (``codecs.base.TurnEncoder``).

A turn's blocks depend on the turn, the plan and — for an assistant turn, on a model whose
profile carries something else inside the current tool loop than before it (Kimi K3) — on
whether the turn is in that loop: its *context* (``"loop"`` or ``""``). The walk state is where
the loop starts (None when it changes nothing for the plan, so a history that only grew
continues the previous walk). A turn's bytes are its blocks, comma-joined; ``assemble`` merges
consecutive same-role turns into one Converse message (tool results travel in user messages),
adds the user messages Converse needs first and last, and notes where each opaque block landed —
``messages[m].content[b]`` — from the turns' after facts (``TurnBlocks``), so a rejection naming
a place is read against the request as sent, without encoding it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
)
from thoughtline.codecs.bedrock.encode import block_carriers, request_body, turn_blocks
from thoughtline.codecs.bedrock.profile import BedrockProfile
from thoughtline.codecs.bedrock.wire import (
    REASONING_TEXT,
    REDACTED,
    SIGNATURE,
    TEXT,
    USER_FIRST,
    USER_LAST,
)
from thoughtline.messages import Message
from thoughtline.replay import ReplayPlan

IN_LOOP = "loop"  # an assistant turn's context inside the current tool loop
# The pieces ``assemble`` writes the messages with: a message's opening (by role), the user
# messages Converse needs first and last.
_USER, _ASSISTANT = b'{"role":"user","content":[', b'{"role":"assistant","content":['
_FIRST = orjson.dumps({"role": "user", "content": [{TEXT: USER_FIRST}]}) + b","
_LAST = b"]}," + orjson.dumps({"role": "user", "content": [{TEXT: USER_LAST}]})


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnBlocks(Named):
    """One turn as sent (its after facts): how many blocks it adds, where its opaque blocks sit
    among them with their fingerprints, and its reasoning carriers (the request log's counts)."""

    blocks: int = 0
    #: (offset among the turn's blocks, fingerprint) of each opaque block, for ``classify``.
    opaque: tuple[tuple[int, str], ...] = ()
    reasoning_text: int = 0
    signatures: int = 0
    redacted: int = 0


#: A turn's after facts, shared by value (most user and tool turns differ only in block count).
_blocks = sharer(TurnBlocks)


@dataclass(frozen=True, slots=True)
class Loop:
    """The walk state: the index of the first turn of the current tool loop, or None when being
    inside the loop changes nothing for the plan (every profile but a region-bound one)."""

    start: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Sent:
    """Where an opaque value went: ``messages[message].content[block]``, and its fingerprint."""

    message: int
    block: int
    fingerprint: str


class Carried:
    """What a request carried, for ``classify`` and the request log: where each opaque block
    went, the reasoning carriers sent and the assistant messages, read from the turns' after
    facts on first need (an accepted request that is not logged never adds them up)."""

    __slots__ = ("_afters", "_facts", "_read", "extras")

    def __init__(self, afters: Sequence[TurnBlocks] = (), facts: Sequence[TurnFacts] = (), *,
                 extras: tuple[str, ...] = ()) -> None:
        self._afters, self._facts, self.extras = afters, facts, extras
        #: ``additionalModelRequestFields`` keys (the log's ``body_extras``).
        self._read: tuple[tuple[Sent, ...], dict[str, int], int] | None = None

    def _reading(self) -> tuple[tuple[Sent, ...], dict[str, int], int]:
        if self._read is None:
            sent: list[Sent] = []
            counts = [0, 0, 0]
            messages = assistant = size = 0
            role_now = ""
            for facts, after in zip(self._facts, self._afters, strict=True):
                if not after.blocks or facts.role == "system":
                    continue
                role = "assistant" if facts.role == "assistant" else "user"
                if role != role_now:
                    if not messages and role == "assistant":
                        messages += 1  # the user message Converse needs first
                    messages += 1
                    assistant += role == "assistant"
                    role_now, size = role, 0
                for offset, fp in after.opaque:
                    sent.append(Sent(message=messages - 1, block=size + offset, fingerprint=fp))
                size += after.blocks
                counts[0] += after.reasoning_text
                counts[1] += after.signatures
                counts[2] += after.redacted
            carriers = {k: v for k, v in zip((REASONING_TEXT, SIGNATURE, REDACTED), counts,
                                             strict=True) if v}
            self._read = (tuple(sent), carriers, assistant)
        return self._read

    @property
    def sent(self) -> tuple[Sent, ...]:
        return self._reading()[0]

    @property
    def carriers(self) -> Mapping[str, int]:
        return self._reading()[1]

    @property
    def assistant_turns(self) -> int:
        """How many assistant messages the request holds (same-role turns merged)."""
        return self._reading()[2]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Carried):
            return NotImplemented
        return (self.extras, self._reading()) == (other.extras, other._reading())

    __hash__ = None  # type: ignore[assignment]


class BedrockTurns:
    """The Converse ``TurnEncoder``."""

    #: Bump when a turn's bytes or its after facts change: older stored forms are not found.
    version = "converse-turns-1"
    flat = False
    extra_type = None
    after_type = TurnBlocks

    #: No extra facts: the neutral ones, called directly (a cold request reads every turn's).
    facts = TurnFacts.of

    def start(self, plan: ReplayPlan, spec: RequestSpec, facts: Sequence[TurnFacts]) -> Loop:
        profile = profile_of(plan, BedrockProfile)
        if profile.prior == profile.loop:
            return Loop(None)
        for index in range(len(facts) - 1, -1, -1):  # replay.loop_start, over the facts
            if facts[index].opens:
                return Loop(index + 1)
        return Loop(0)

    def context(self, state: Loop, index: int, facts: TurnFacts) -> Context:
        start = state.start
        in_loop = start is not None and index >= start and facts.role == "assistant"
        return IN_LOOP if in_loop else ""

    def encode_turn(self, message: Message, plan: ReplayPlan,
                    context: Context) -> tuple[bytes, TurnBlocks]:
        role, blocks, fps = turn_blocks(message, plan, in_loop=context == IN_LOOP)
        if not blocks:
            return b"", _blocks(0, (), 0, 0, 0)
        data = orjson.dumps(blocks)[1:-1]  # (the array's items: one call per turn)
        if role != "assistant" and not any(fps):
            return data, _blocks(len(blocks), (), 0, 0, 0)  # (most user and tool turns)
        counts = block_carriers(blocks) if role == "assistant" else {}
        return data, TurnBlocks.of_fields(  # (fields in order: a cold build makes one a turn)
            len(blocks), tuple([(at, fp) for at, fp in enumerate(fps) if fp]),
            counts.get(REASONING_TEXT, 0), counts.get(SIGNATURE, 0), counts.get(REDACTED, 0))

    def state_json(self, state: Loop) -> int | None:
        return state.start

    def state_of(self, value: Any) -> Loop:
        if value is not None and type(value) is not int:
            raise TypeError("a Converse walk state is a turn index or null")
        return Loop(value)

    def advance(self, state: Loop, facts: TurnFacts, context: Context,
                after: TurnBlocks) -> Loop:
        return state

    def assemble(self, walk: Walk[Loop, TurnBlocks], spec: RequestSpec,
                 plan: ReplayPlan) -> Encoded:
        system: list[Any] = []
        pieces: list[bytes] = []  # every Converse message, comma-joined, in pieces
        add = pieces.append
        role_now = b""
        for data, facts in zip(walk.turns, walk.facts, strict=True):
            if not data:
                continue
            if facts.role == "system":
                system.append(orjson.Fragment(data))
                continue
            role = _ASSISTANT if facts.role == "assistant" else _USER
            if role is role_now:
                add(b",")  # same role: the turn goes into the open message
            else:
                if role_now:
                    add(b"]},")
                elif role is _ASSISTANT:
                    add(_FIRST)  # Converse needs a user message first
                add(role)
                role_now = role
            add(data)
        if role_now:
            add(b"]}" if role_now is _USER else _LAST)  # and a user message last
        messages: list[Any] = [orjson.Fragment(b"".join(pieces))] if pieces else []
        body = request_body(system, messages, plan, tools=spec.tools, params=spec.params)
        index = Carried(walk.afters, walk.facts,
                        extras=tuple(body.get("additionalModelRequestFields", {})))
        return Encoded(raw=orjson.dumps(body), index=index)


TURNS = BedrockTurns()
