"""The Interactions route profile: the signature scope and whether the server keeps state.

Made from a row of ``routes/gemini-interactions.toml``. Thought signatures are scoped as on
``generateContent`` (Vertex thought-signatures page: same service and project, same model family and
tier; ``codecs.gemini.scope`` holds that rule for both Gemini APIs). ``store`` is the API's own
default (ai.google.dev/gemini-api/docs/interactions: ``store`` defaults to true; ``store: false`` is
stateless); a session's request params may say ``store = false``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from thoughtline.codecs.base import Profile
from thoughtline.codecs.gemini import scope
from thoughtline.codecs.interactions.wire import API, NS, SIG
from thoughtline.errors import ConfigError
from thoughtline.messages import Origin
from thoughtline.routes.resolve import host_matches
from thoughtline.verdicts import Verdict


@dataclass(frozen=True, kw_only=True, slots=True)
class InteractionsProfile(Profile):
    """What an Interactions route reads back. ``service`` names the signing service;
    ``services`` maps host patterns to service names (Vertex regional and global hosts are one)."""

    service: str = ""
    services: tuple[tuple[str, tuple[str, ...]], ...] = ()
    store: bool = True

    @classmethod
    def from_row(cls, raw: Mapping[str, Any],
                 services: Mapping[str, Any]) -> InteractionsProfile:
        try:
            store = raw.get("store", True)
            if not isinstance(store, bool):
                raise ValueError(f"store must be true or false, not {store!r}")
            return cls(service=str(raw.get("service", "")), store=store,
                       services=tuple((str(name), tuple(str(h).lower() for h in hosts))
                                      for name, hosts in services.items()))
        except (TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"gemini-interactions route profile is malformed: {exc}") from exc

    def narrowed(self, verdicts: Sequence[Verdict]) -> InteractionsProfile:
        return self  # nothing is learned per route: rejected signatures are fingerprinted

    def service_of(self, host: str) -> str:
        for name, hosts in self.services:
            if any(host_matches(host, h) for h in hosts):
                return name
        return ""

    def accepts(self, origin: Origin, target: Origin) -> bool:
        return _accepts(self, origin, target)

    def describe(self) -> list[str]:
        mode = ("server-side state (store: true, previous_interaction_id)" if self.store
                else "stateless (store: false, the whole history each turn)")
        return [f"thought steps replayed with their signatures, byte for byte; {mode}",
                "signatures stay within one signing service and project, model family and tier"]

    def public_json(self) -> dict[str, Any]:
        return {"carriers": [SIG], "native": [NS], "must_echo": False,
                "service": self.service, "store": self.store}


@lru_cache(maxsize=1024)
def _accepts(profile: InteractionsProfile, origin: Origin, target: Origin) -> bool:
    if origin.api != API or target.api != API:
        return False
    if origin.host or target.host:
        if origin.host != target.host and (
                not profile.service_of(origin.host)
                or profile.service_of(origin.host) != profile.service_of(target.host)):
            return False
    elif origin.provider != target.provider:
        return False
    return scope.same_project(origin, target) and scope.can_read(origin.model, target.model)
