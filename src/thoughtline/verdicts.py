"""Verdicts: what a provider taught us about one (provider id, host, model).

A plain value with its stored JSON form; the store's ledger, sessions and the replay plan share
it. It imports nothing from the route table so the store and the CLI stay light to import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
    """What a provider taught us about one (provider id, host, model).

    ``drop`` are carriers it rejected as unknown fields; ``pad`` means it demanded the must-echo
    placeholder. Verdicts are persisted with the session and in the store's global ledger.
    """

    provider: str
    host: str
    model: str
    drop: frozenset[str] = frozenset()
    pad: bool = False
    reason: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.provider, self.host, self.model)

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "host": self.host, "model": self.model,
                "drop": sorted(self.drop), "pad": self.pad, "reason": self.reason}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Verdict:
        return cls(provider=raw["provider"], host=raw.get("host", ""), model=raw.get("model", ""),
                   drop=frozenset(raw.get("drop", ())), pad=bool(raw.get("pad", False)),
                   reason=raw.get("reason", ""))

    def merged(self, other: Verdict) -> Verdict:
        return Verdict(provider=self.provider, host=self.host, model=self.model,
                       drop=self.drop | other.drop, pad=self.pad or other.pad,
                       reason="; ".join(r for r in (self.reason, other.reason) if r))
