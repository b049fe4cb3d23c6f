"""The turn encoder of an API whose request carries one flat array of per-turn items (Chat
Completions ``messages``, Responses ``input``), each turn's items a function of the turn and the
plan only (``codecs.base.TurnEncoder`` with ``flat``: no context, no walk state).

A turn's bytes are its items' JSON, comma-joined, so the request splices them into the array as
they are (``orjson.Fragment``); its after facts are the request log's counts of it (``Counts``,
added up by ``counted``). The API supplies how a turn becomes items, how an item is counted and
the body around the array; nothing here knows a field name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs.base import Context, Named, RequestSpec, TurnFacts
from thoughtline.messages import Message
from thoughtline.replay import ReplayPlan

Items = Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Counts(Named):
    """One turn's items as the request log counts them (its after facts): assistant items,
    pads, and each carrier and native field once per occurrence."""

    assistant: int = 0
    pads: int = 0
    carriers: tuple[str, ...] = ()
    native: tuple[str, ...] = ()


#: The counts of a turn with nothing the log counts (most user and tool turns).
NOTHING = Counts()


def counted(turns: Iterable[Counts], extras: Sequence[str]) -> dict[str, Any]:
    """The request log's view of a request whose turns had these counts."""
    assistant = pads = 0
    carriers: list[str] = []
    native: list[str] = []
    for counts in turns:  # (counted once at the end: ``Counter.update`` per turn cost 6x)
        if counts is NOTHING:
            continue
        assistant += counts.assistant
        pads += counts.pads
        carriers += counts.carriers
        native += counts.native
    return {"assistant_turns": assistant, "carriers": dict(Counter(carriers)), "pads": pads,
            "native": dict(Counter(native)), "body_extras": list(extras)}


class FlatTurns:
    """The flat part of a ``TurnEncoder``: made with the API's ``version``, how a turn becomes
    items and how items are counted; a subclass gives ``assemble``."""

    flat = True
    extra_type = None
    after_type = Counts

    def __init__(self, *, version: str, items: Callable[[Message, ReplayPlan], Items],
                 count: Callable[[Items], Counts]) -> None:
        self.version = version
        self.items = items
        self.count = count

    def facts(self, message: Message) -> TurnFacts:
        return TurnFacts.of(message)

    def start(self, plan: ReplayPlan, spec: RequestSpec, facts: Sequence[TurnFacts]) -> None:
        return None

    def context(self, state: None, index: int, facts: TurnFacts) -> Context:
        return ""

    def encode_turn(self, message: Message, plan: ReplayPlan,
                    context: Context) -> tuple[bytes, Counts]:
        items = self.items(message, plan)
        # (the items' JSON comma-joined: the array's bytes without its brackets, in one call)
        return orjson.dumps(items)[1:-1], self.count(items)

    def state_json(self, state: None) -> None:
        return None

    def state_of(self, value: Any) -> None:
        return None

    def advance(self, state: None, facts: TurnFacts, context: Context, after: Counts) -> None:
        return None


def WireCache() -> Any:  # what callers made before: the core's one cache now
    """A session's wire cache (``thoughtline.wire.cache.WireCache``)."""
    from thoughtline.wire.cache import WireCache as Cache

    return Cache()


def cached_body(cache: Any, api: str, history: Sequence[Message], plan: ReplayPlan,
                spec: RequestSpec) -> dict[str, Any]:
    """The body the core's wire ``cache`` sends for ``history`` on ``api``, read back: what an
    API's module-level ``encode_request(…, cache=…)`` returns."""
    from thoughtline.codecs import registry

    encoded = cache.encode(registry.codec(api), history, plan, spec)
    body = dict(encoded.body)
    cache.last = (body, encoded.index)
    return body


def cached_index(cache: Any, body: object) -> object:
    """The index of the request whose body ``cached_body`` returned as ``body`` (else None)."""
    last = cache.last if cache is not None else None
    return last[1] if last is not None and last[0] is body else None
