"""One request's walk over its history (``cache``): ``Steps``, filled turn by turn, with its
turns' ``Facts``; the cache remembers it as the walk a later request of the history goes on from.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from thoughtline.codecs.base import Context, Walk
from thoughtline.messages import Message
from thoughtline.wire.facts import TurnFacts

__all__ = ["UNKNOWN", "Facts", "Steps", "common"]

#: How many pieces a remembered walk's array content may be in before they are joined again.
_CHUNKS = 32
#: The state after a stored turn a stored walk does not hold (only the last one's is stored).
UNKNOWN = object()


class Facts(Sequence[TurnFacts]):
    """Every turn's facts of one walk, each made on first read (a Chat request reads none): the
    first ``split`` turns' (a resumed history's stored turns) from ``stored``, all at once, the
    others' from their messages (``of``); ``all`` as a plain list."""

    __slots__ = ("_made", "_of", "_split", "_stored", "_tokens")

    def __init__(self, tokens: list[Any], of: Callable[[Message], TurnFacts], split: int,
                 stored: Callable[[], Sequence[TurnFacts]],
                 made: list[TurnFacts | None] | None = None) -> None:
        self._tokens, self._of, self._split, self._stored = tokens, of, split, stored
        self._made: list[TurnFacts | None] = [None] * len(tokens) if made is None else made

    def kept(self, count: int, tokens: list[Any], split: int,
             stored: Callable[[], Sequence[TurnFacts]]) -> Facts:
        """The facts of a walk over ``tokens`` whose first ``count`` turns are this walk's."""
        made = self._made[:count]
        made += itertools.repeat(None, len(tokens) - count)
        return Facts(tokens, self._of, split, stored, made)

    def __len__(self) -> int:
        return len(self._made)

    def __getitem__(self, index: Any) -> Any:  # (an int: a TurnFacts; a slice: a list)
        if isinstance(index, slice):
            return self.all()[index]
        found = self._made[index]
        if found is None:
            if index < 0:
                index += len(self._made)
            found = self._made[index] = (self._of(self._tokens[index]) if index >= self._split
                                         else self._stored()[index])
        return found

    def __iter__(self) -> Iterator[TurnFacts]:  # (at C speed, not a __getitem__ per turn)
        return iter(self.all())

    def all(self) -> list[TurnFacts]:
        """Every turn's facts, as a list (made now where they are not yet)."""
        made, split = self._made, self._split
        if None in made:
            if None in made[:split]:
                made[:split] = self._stored()
            for index in range(made.index(None) if None in made else len(made), len(made)):
                if made[index] is None:
                    made[index] = self._of(self._tokens[index])
        return made  # type: ignore[return-value]


@dataclass(slots=True, kw_only=True)
class Steps:
    """One walk, turn by turn (the request's; remembered, the last one under its plan)."""

    tokens: list[object]  # per turn: its stored message id, or the message itself
    start: object
    facts: Facts
    state: object  # the state after the last turn walked
    turns: list[bytes] = field(default_factory=list)
    afters: list[Any] = field(default_factory=list)
    contexts: list[Context] = field(default_factory=list)
    #: The state after each turn (non-flat encoders only; ``UNKNOWN`` where a stored walk
    #: holds none)
    states: list[object] = field(default_factory=list)
    #: The array content in pieces (``Fragment``s): earlier requests' turns joined into a few
    #: chunks, then this walk's own turns one piece each (no copy of them yet)
    chunks: list[Any] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)  # how many turns each chunk covers up to

    def goes_on(self, count: int, start: object, *, flat: bool) -> bool:
        """Whether a walk from ``start`` whose first ``count`` turns are this walk's continues
        it (a flat walk's turns do not depend on its state: it goes on whatever the start)."""
        return bool(count) and (flat or (start == self.start
                                         and self.states[count - 1] is not UNKNOWN))

    def kept(self, count: int, tokens: list[object], start: object, facts: Facts, *,
             flat: bool) -> Steps:
        """The walk of ``tokens`` that goes on from this one's first ``count`` turns."""
        turns = self.turns[:count]
        ends, chunks = self._reused(turns)
        return Steps(tokens=tokens, start=start, facts=facts,
                     state=start if flat else self.states[count - 1], turns=turns,
                     afters=self.afters[:count], contexts=self.contexts[:count],
                     states=self.states[:count], chunks=chunks, ends=ends)

    def _reused(self, turns: list[bytes]) -> tuple[list[int], list[Any]]:
        """The pieces that cover the first ``len(turns)`` turns (their ends, the pieces), the
        one-turn pieces joined into one chunk (they are reused a second time: serialized as one
        piece from now on), and all of them joined again when a long session has made many."""
        kept = len(turns)
        reuse = bisect.bisect_right(self.ends, kept)
        if reuse >= _CHUNKS:
            reuse = 0
        ends, chunks = self.ends[:reuse], self.chunks[:reuse]
        covered = ends[-1] if ends else 0
        rest = [data for data in turns[covered:] if data]
        if rest:
            ends.append(kept)
            chunks.append(orjson.Fragment(b",".join(rest)))
        return ends, chunks

    def walk(self, facts: Sequence[TurnFacts], history: Sequence[Message]) -> Walk[Any, Any]:
        """The walk as the codec's ``assemble`` gets it. This walk's own turns, stored forms
        included, go in one piece each: joined into one chunk only if a later walk reuses them
        (``kept``), so a resume's first request copies its stored bytes once, into the body."""
        covered = self.ends[-1] if self.ends else 0
        self.chunks += map(orjson.Fragment, filter(None, itertools.islice(
            self.turns, covered, None)))
        return Walk(state=self.state, turns=self.turns, fragments=self.chunks, facts=facts,
                    afters=self.afters, contexts=self.contexts, history=history)


def common(before: list[object], now: list[object]) -> int:
    """How many leading turns ``now`` shares with ``before``: by identity (at C speed), then by
    equality (a gateway decodes the history a client resends into new, equal messages; equal
    turns have equal forms, so the walk of the last request goes on from there)."""
    same = list(map(operator.is_, before, now))
    try:
        count = same.index(False)
    except ValueError:
        return len(same)
    for a, b in zip(before[count:], now[count:], strict=False):
        if a is not b and a != b:
            break
        count += 1
    return count
