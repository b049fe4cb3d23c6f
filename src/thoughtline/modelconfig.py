"""A session's model config as a typed value, and how two writers' changes merge.

Owns the stored shape of what a session is configured with and what it learned: the provider
(ids, URL, the *name* of the key variable — never a key, never headers), tools, request
parameters, learned verdicts, rejected-value fingerprints and per-session API settings (e.g.
Anthropic's ``prefix_mismatch_behavior``). ``merge`` is how the store combines a session's change
with what another process wrote meanwhile: learned things are unions, never overwritten.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from thoughtline.config import ProviderConfig
from thoughtline.errors import StoreError
from thoughtline.messages import ToolSpec
from thoughtline.verdicts import Verdict

if TYPE_CHECKING:
    from thoughtline.codecs.base import Lesson

#: Model-config key set by ``sessions import``: where the session came from, whether its
#: provider (URL, key variable) was trusted, and (under ``HELD_KEY``) the request params and
#: per-API settings the file named, held out of the session's own config: they shape requests
#: only when the user trusts the file. Kept like any unknown key (``ModelConfig.extra``).
IMPORTED_KEY = "imported"
HELD_KEY = "held"

#: Model-config key set by ``thoughtline demo`` on its sessions: ``{"scenario": label}``, so that
#: ``chat -r`` resumes one against a freshly started emulator of that scenario.
DEMO_KEY = "demo"

_KNOWN = frozenset({"provider", "tools", "params", "verdicts", "fingerprints", "settings"})


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelConfig:
    """What a session talks to and what it learned there."""

    provider: ProviderConfig
    tools: tuple[ToolSpec, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    verdicts: tuple[Verdict, ...] = ()
    fingerprints: frozenset[str] = frozenset()
    #: Per-session API settings, namespaced by API id: {"anthropic": {...}}.
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Keys a newer thoughtline wrote that this one does not know: kept, never dropped.
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        out.update({
            "provider": self.provider.to_json(),
            "tools": [{"name": t.name, "description": t.description,
                       "parameters": dict(t.parameters)} for t in self.tools],
            "params": dict(self.params),
            "verdicts": [v.to_json() for v in self.verdicts],
            "fingerprints": sorted(self.fingerprints),
        })
        if self.settings:
            out["settings"] = {api: dict(values) for api, values in self.settings.items()}
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ModelConfig:
        """Parse a stored config; raises StoreError naming what is wrong."""
        try:
            provider = ProviderConfig.from_json(raw["provider"])
            tools = tuple(ToolSpec(name=t["name"], description=t.get("description", ""),
                                   parameters=t.get("parameters", {}))
                          for t in raw.get("tools", ()))
            params = dict(raw.get("params", {}))
            verdicts = tuple(Verdict.from_json(v) for v in raw.get("verdicts", ()))
            fingerprints = frozenset(str(f) for f in raw.get("fingerprints", ()))
            settings = {str(k): dict(v) for k, v in dict(raw.get("settings", {})).items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise StoreError(f"the stored model config is malformed ({exc!r}); repair it with "
                             "'thoughtline sessions export' and 'sessions import'") from exc
        extra = {k: v for k, v in raw.items() if k not in _KNOWN}
        return cls(provider=provider, tools=tools, params=params, verdicts=verdicts,
                   fingerprints=fingerprints, settings=settings, extra=extra)

    def api_settings(self, api: str) -> Mapping[str, Any]:
        return self.settings.get(api, {})

    def learned(self, *, verdicts: Iterable[Verdict] = (), fingerprints: Iterable[str] = (),
                settings: Mapping[str, Mapping[str, Any]] | None = None) -> ModelConfig:
        """This config plus what a turn learned (merged like ``merge`` does)."""
        return replace(self, verdicts=merge_verdicts(self.verdicts, verdicts),
                       fingerprints=self.fingerprints | frozenset(fingerprints),
                       settings=merge_settings(self.settings, settings or {}))

    def after(self, lesson: Lesson) -> ModelConfig:
        """This config plus what one rejected request taught (its verdict, if any, its
        fingerprints and settings): what the turn's retry, the session and the gateway store."""
        return self.learned(verdicts=(lesson.verdict,) if lesson.verdict else (),
                            fingerprints=lesson.fingerprints, settings=lesson.settings)


def merge_verdicts(known: Iterable[Verdict], new: Iterable[Verdict]) -> tuple[Verdict, ...]:
    """One verdict per (provider, host, model), each the union of what was learned."""
    merged: dict[tuple[str, str, str], Verdict] = {}
    for verdict in (*known, *new):
        seen = merged.get(verdict.key)
        merged[verdict.key] = verdict if seen is None else _union(seen, verdict)
    return tuple(merged.values())


def _union(a: Verdict, b: Verdict) -> Verdict:
    if a == b or (b.drop <= a.drop and (a.pad or not b.pad)):
        return a
    return a.merged(b)


def merge_settings(base: Mapping[str, Mapping[str, Any]],
                   new: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {api: dict(values) for api, values in base.items()}
    for api, values in new.items():
        out.setdefault(api, {}).update(values)
    return out


def merge(stored: Mapping[str, Any], mine: ModelConfig, *,
          base: ModelConfig | None = None) -> dict[str, Any]:
    """The config to store when this session writes ``mine`` over what is ``stored`` now.

    Learned things (verdicts, fingerprints, settings) are the union of both sides; the provider,
    tools and params are ``mine`` when this session changed them (relative to ``base``, what it
    loaded), else what is stored — a stale second writer never undoes another's change.
    """
    theirs = ModelConfig.from_json(stored) if stored else mine
    base = base or theirs
    chosen = ModelConfig(
        provider=mine.provider if mine.provider != base.provider else theirs.provider,
        tools=mine.tools if mine.tools != base.tools else theirs.tools,
        params=mine.params if dict(mine.params) != dict(base.params) else theirs.params,
        verdicts=merge_verdicts(theirs.verdicts, mine.verdicts),
        fingerprints=theirs.fingerprints | mine.fingerprints,
        settings=merge_settings(theirs.settings, mine.settings),
        extra={**mine.extra, **theirs.extra},
    )
    return chosen.to_json()


def imported_held(model_config: Mapping[str, Any],
                  ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The (params, settings) an imported file named, held until the user trusts the file."""
    marker = model_config.get(IMPORTED_KEY)
    held = marker.get(HELD_KEY) if isinstance(marker, Mapping) else None
    if not isinstance(held, Mapping):
        return {}, {}
    params = held.get("params")
    settings = held.get("settings")
    return (dict(params) if isinstance(params, Mapping) else {},
            {str(api): dict(values) for api, values in settings.items()
             if isinstance(values, Mapping)} if isinstance(settings, Mapping) else {})


def unheld_import(model_config: Mapping[str, Any]) -> bool:
    """True for a session imported before params were held: its config's params and settings
    are the file's, still in place (``hold_imported`` moves them)."""
    marker = model_config.get(IMPORTED_KEY)
    return (provider_untrusted(model_config) and isinstance(marker, Mapping)
            and HELD_KEY not in marker
            and bool(model_config.get("params") or model_config.get("settings")))


def hold_imported(model_config: Mapping[str, Any]) -> dict[str, Any]:
    """``model_config`` with its params and settings moved under the imported marker's
    ``HELD_KEY`` (merged over any held already): kept, but no longer used by requests."""
    out = dict(model_config)
    marker = dict(out[IMPORTED_KEY])
    params, settings = imported_held(out)
    params.update(out.pop("params", None) or {})
    settings = merge_settings(settings, out.pop("settings", None) or {})
    marker[HELD_KEY] = {name: value for name, value in (("params", params),
                                                        ("settings", settings)) if value}
    out[IMPORTED_KEY] = marker
    return out


def provider_untrusted(model_config: Mapping[str, Any]) -> bool:
    """True for a session imported from a file whose provider was not explicitly trusted: its
    stored URL and key variable must not be used, nor config headers sent to that URL."""
    marker = model_config.get(IMPORTED_KEY)
    return isinstance(marker, Mapping) and marker.get("provider_trusted") is not True
