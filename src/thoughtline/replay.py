"""Per-request replay decisions: which reasoning a route receives on this request.

This module owns the step between a resolved route and a codec: the route table says what a route
reads; learned verdicts narrow (or, for a learned pad, widen) that. The result is a ``ReplayPlan``,
a small hashable value the codec obeys and its per-turn wire cache is keyed by. Nothing here
touches a history; nothing here knows a wire shape beyond the carrier names of the route table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from thoughtline.messages import Origin
from thoughtline.routes.resolve import ECHO_CARRIER, Route
from thoughtline.verdicts import Verdict

__all__ = ["ReplayPlan", "Verdict", "applicable", "plan"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ReplayPlan:
    """What one request may carry: the codec sends exactly this and nothing else."""

    carriers: frozenset[str]
    pad: bool = False
    native: frozenset[str] = frozenset()
    #: (provider id, model) this request goes to. Signed and encrypted reasoning is replayed only
    #: to the producer that made it; ("", "") means "no producer rule" (plans built by hand).
    producer: tuple[str, str] = ("", "")
    body_extras: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    drop_params: frozenset[str] = field(default=frozenset(), compare=False, hash=False)

    @property
    def key(self) -> tuple[frozenset[str], bool, frozenset[str], tuple[str, str]]:
        """What the wire form of a stored turn depends on (the codec's cache key)."""
        return (self.carriers, self.pad, self.native, self.producer)

    def produced_here(self, origin: Origin | None) -> bool:
        """The cross-provider policy: may opaque reasoning from ``origin`` go on this request?

        Another provider's or another model's signed or encrypted reasoning is never sent (it is
        bound to the model that made it and fails verification elsewhere); its readable text
        still travels in the plain carriers. A value with no recorded origin is the caller's own.
        """
        if origin is None or self.producer == ("", ""):
            return True
        return (origin.provider, origin.model.lower()) == self.producer


def applicable(route: Route, verdicts: Iterable[Verdict]) -> list[Verdict]:
    """The verdicts recorded for exactly this route's (provider, host, model)."""
    key = (route.provider, route.host, route.model)
    return [v for v in verdicts if v.key == key]


def plan(route: Route, verdicts: Iterable[Verdict] = ()) -> ReplayPlan:
    """The plan for one request on ``route`` after applying what was learned for it."""
    carriers = set(route.carriers)
    pad = route.must_echo
    for verdict in applicable(route, verdicts):
        carriers -= verdict.drop
        pad = pad or verdict.pad
    if pad and ECHO_CARRIER not in route.carriers:
        # A learned pad only ever adds the placeholder where the route reads the field at all.
        pad = False
    return ReplayPlan(carriers=frozenset(carriers), pad=pad and ECHO_CARRIER in carriers,
                      native=route.native, producer=(route.provider, route.model.lower()),
                      body_extras=route.body_extras, drop_params=route.drop_params)
