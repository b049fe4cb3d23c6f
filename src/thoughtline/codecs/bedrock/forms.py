"""Bedrock Converse turns as stored wire forms, and a resumed request spliced from them.

A turn's Converse blocks depend on the turn, the plan and whether the turn is inside the current
tool loop (``turn_blocks``). A stored form is the turn's blocks for the plan *outside* the loop
(comma-joined JSON, spliced into a message's ``content`` as they are) with a ``meta`` of its
Converse role, block count, where its opaque blocks sit (their fingerprints, for ``classify``) and
its carrier counts (for the log). A resumed request splices the forms of every turn before the
current loop, merging same-role turns as ``encode`` does; turns in the loop (a resume in the
middle of a tool loop) and any turn without a form are encoded from the canonical history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs.bedrock.encode import (
    Assembly,
    Blocks,
    Sent,
    WireCache,
    block_carriers,
    blocks_of,
    turn_blocks,
)
from thoughtline.codecs.bedrock.wire import API, TEXT, USER_LAST
from thoughtline.messages import Message
from thoughtline.replay import ReplayPlan, loop_start, plan_digest
from thoughtline.stored import meta_of

VERSION = "converse-2"  # bump when a stored turn's blocks or meta change


def digest_of(plan: ReplayPlan) -> str:
    return plan_digest(plan, api=API, version=VERSION)


def wire_forms(history: Sequence[Message], start: int,
               plan: ReplayPlan) -> dict[int, tuple[bytes, bytes]]:
    """The stored forms of ``history[start:]``: each turn as it goes out before the loop."""
    out: dict[int, tuple[bytes, bytes]] = {}
    for index in range(start, len(history)):
        message = history[index]
        role, blocks, fps = turn_blocks(message, plan, in_loop=False)
        meta: dict[str, Any] = {**meta_of(message), "w": role, "n": len(blocks)}
        marks = [[offset, fp] for offset, fp in enumerate(fps) if fp]
        if marks:
            meta["f"] = marks
        counts = block_carriers(blocks) if role == "assistant" else {}
        if counts:
            meta["k"] = counts
        out[index] = (b",".join(orjson.dumps(b) for b in blocks), orjson.dumps(meta))
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class Spliced:
    """What ``classify`` and the log need about a spliced body (its bytes are the request)."""

    sent: tuple[Sent, ...]
    carriers: Mapping[str, int]
    assistant_turns: int
    extras: tuple[str, ...] = ()  # additionalModelRequestFields keys (the log's body_extras)


class _Splice(Assembly):
    """An assembly that also takes stored forms, and keeps the log's counts as it goes."""

    __slots__ = ("carriers",)

    def __init__(self) -> None:
        super().__init__()
        self.carriers: dict[str, int] = {}

    def copy(self) -> _Splice:
        other = _Splice()
        other.system, other.sent = list(self.system), list(self.sent)
        other.out = [{"role": m["role"], "content": list(m["content"])} for m in self.out]
        other.sizes, other.carriers = list(self.sizes), dict(self.carriers)
        return other

    def _count(self, counts: Mapping[str, int]) -> None:
        for key, count in counts.items():
            self.carriers[key] = self.carriers.get(key, 0) + count

    def add_form(self, meta: Mapping[str, Any], data: bytes) -> None:
        role, count = meta["w"], meta["n"]
        if role == "system":
            if count:
                self.system.append(orjson.Fragment(data))
            return
        if not count:
            return
        content = self.open(role)
        at = self.sizes[-1]
        for offset, fp in meta.get("f", ()):
            self.sent.append(Sent(message=len(self.out) - 1, block=at + offset, fingerprint=fp))
        content.append(orjson.Fragment(data))
        self.sizes[-1] += count
        self._count(meta.get("k", {}))

    def add(self, blocks: Blocks) -> None:
        super().add(blocks)
        if blocks[0] == "assistant":
            self._count(block_carriers(blocks[1]))


def spliced_messages(history: Sequence[Message], base: Any, plan: ReplayPlan,
                     cache: WireCache | None,
                     ) -> tuple[list[Any], list[dict[str, Any]], Spliced] | None:
    """(system, messages, what was sent) spliced from ``base``'s stored forms, or None when a
    turn before the loop has no form for this plan (then the history is encoded as usual)."""
    digest = digest_of(plan)
    start = loop_start(history)
    key = (plan.key, id(base))
    kept = cache.spliced.get(key) if cache is not None else None
    if kept is not None and kept[0] is base and kept[1] <= start:
        limit, splice = kept[1], kept[2].copy()
    else:
        stored = base.stored_wire(digest)
        limit = min(start, len(stored))
        if any(stored[index] is None for index in range(limit)):
            return None
        splice = _Splice()
        for index in range(limit):
            splice.add_form(base.meta(index), stored[index])
        if cache is not None:
            cache.spliced[key] = (base, limit, splice.copy())
    prior = cache.turns(plan, False) if cache is not None else None
    looped = cache.turns(plan, True) if cache is not None else None
    for index in range(limit, len(history)):
        in_loop = index >= start
        splice.add(blocks_of(history[index], plan, in_loop, looped if in_loop else prior))
    out = splice.out
    if out and out[-1]["role"] == "assistant":
        out.append({"role": "user", "content": [{TEXT: USER_LAST}]})
    turns = sum(1 for m in out if m["role"] == "assistant")
    return splice.system, out, Spliced(sent=tuple(splice.sent), carriers=dict(splice.carriers),
                                       assistant_turns=turns)
