"""The Gemini route profile: what a Gemini route reads back, and the signature scope.

Made from a row of ``routes/gemini.toml`` (its ``profile`` table) and narrowed by verdicts learned
for exactly that route. Frozen and hashable: it keys the wire cache.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Literal

from thoughtline.codecs.base import Profile
from thoughtline.codecs.gemini import scope
from thoughtline.codecs.gemini.wire import API, DUMMY_CARRIER, DUMMY_SIGNATURE, NS, SIG
from thoughtline.errors import ConfigError
from thoughtline.messages import Origin
from thoughtline.routes.resolve import host_matches
from thoughtline.verdicts import Verdict

ForeignCalls = Literal["dummy", "text"]
_VERSION = re.compile(r"gemini-(\d+(?:\.\d+)?)")


@dataclass(frozen=True, kw_only=True, slots=True)
class GeminiProfile(Profile):
    """What a Gemini route reads back.

    ``service`` names the signing service (``ai-studio``, ``vertex``); ``services`` maps host
    patterns to those names so an origin's host can be compared with the target's (Vertex
    regional and global hosts are one service). ``foreign_calls`` is how function calls Gemini did
    not sign are sent: with the documented dummy signature, or — once a route rejected the dummy —
    as plain text. ``include_thoughts`` asks for thought summaries on models of family
    ``thinking_from`` and newer.
    """

    service: str = ""
    services: tuple[tuple[str, tuple[str, ...]], ...] = ()
    foreign_calls: ForeignCalls = "dummy"
    include_thoughts: bool = True
    thinking_from: float = 2.5

    @classmethod
    def from_row(cls, raw: Mapping[str, Any], services: Mapping[str, Any]) -> GeminiProfile:
        try:
            foreign = str(raw.get("foreign_calls", "dummy"))
            if foreign not in ("dummy", "text"):
                raise ValueError(f"foreign_calls must be 'dummy' or 'text', not {foreign!r}")
            return cls(service=str(raw.get("service", "")),
                       services=tuple((str(name), tuple(str(h).lower() for h in hosts))
                                      for name, hosts in services.items()),
                       foreign_calls=foreign,  # type: ignore[arg-type]
                       include_thoughts=bool(raw.get("include_thoughts", True)),
                       thinking_from=float(raw.get("thinking_from", 2.5)))
        except (TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"gemini route profile is malformed: {exc}") from exc

    def narrowed(self, verdicts: Sequence[Verdict]) -> GeminiProfile:
        if any(DUMMY_CARRIER in v.drop for v in verdicts):
            return replace(self, foreign_calls="text")
        return self

    def service_of(self, host: str) -> str:
        for name, hosts in self.services:
            if any(host_matches(host, pattern) for pattern in hosts):
                return name
        return host

    def accepts(self, origin: Origin, target: Origin) -> bool:
        """A Gemini signature goes only to a Gemini route of the same service (and project, where
        known), and only to a model of the same family and tier (``scope``)."""
        return _accepts(self, origin, target)

    def thinks(self, model: str) -> bool:
        """Does ``model`` take a ``thinkingConfig`` (family ``thinking_from`` and newer, or an
        id of another shape)?"""
        if not self.include_thoughts:
            return False
        found = _VERSION.search(model.lower())
        return found is None or float(found.group(1)) >= self.thinking_from

    def describe(self) -> list[str]:
        service = {"vertex": "Vertex AI", "ai-studio": "the Gemini API"}.get(
            self.service, "this endpoint")
        lines = [f"thought signatures: sent back verbatim on the part they came on, only to "
                 f"{service} and a model of the same family and tier",
                 "Gemini's own turns go back whole (thoughts, text, calls) or without any of "
                 "their thinking"]
        if self.foreign_calls == "dummy":
            lines.append(f"function calls from other models carry the placeholder signature "
                         f"{DUMMY_SIGNATURE} on the first call of a step")
        else:
            lines.append("function calls from other models go as plain text (this route "
                         "rejected the placeholder signature)")
        if self.include_thoughts:
            lines.append(f"thought summaries requested (includeThoughts) on Gemini "
                         f"{self.thinking_from:g} and newer")
        return lines

    def effective_json(self) -> dict[str, Any]:
        return {"carriers": [SIG], "must_echo": False, "foreign_calls": self.foreign_calls}

    def public_json(self) -> dict[str, Any]:
        return {"carriers": [SIG], "native": [NS], "must_echo": False,
                "service": self.service, "foreign_calls": self.foreign_calls,
                "include_thoughts": self.include_thoughts}


@lru_cache(maxsize=1024)
def _accepts(profile: GeminiProfile, origin: Origin, target: Origin) -> bool:
    # Memoized: a history has a handful of distinct origins over thousands of turns.
    if origin.api != API or target.api != API:
        return False
    if origin.host or target.host:
        if profile.service_of(origin.host) != profile.service_of(target.host):
            return False
    elif origin.provider != target.provider:
        return False
    return scope.same_project(origin, target) and scope.can_read(origin.model, target.model)
