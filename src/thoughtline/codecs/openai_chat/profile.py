"""The typed profile of a Chat Completions route, made from ``routes/openai-chat.toml``.

Owns the profile value — which carriers a route reads back, the must-echo pad, keep-thinking body
fields, native carriers, the scope of opaque values — and the Chat table's conditions beside its
rows: which must-echo family, keep-thinking rule and native carriers a (provider, host, model)
gets. Which row a request takes (first match wins, hosts, local endpoints, the catch-all) is
``routes.resolve.ApiTable``'s; what a carrier means on the wire is ``encode``'s. Nothing here
builds a body.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from typing import Any, NamedTuple

from thoughtline.codecs.base import Echo, Profile
from thoughtline.codecs.gemini import scope
from thoughtline.codecs.openai_chat.wire import API, RC
from thoughtline.errors import ConfigError
from thoughtline.messages import Origin
from thoughtline.packaged import packaged_text
from thoughtline.routes.resolve import ApiTable, Route, host_matches, hostname_of, parse_api_table
from thoughtline.verdicts import Verdict

ECHO_CARRIER = RC


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatProfile(Profile):
    """What a Chat Completions route reads back, after what was learned for it.

    ``carriers`` are the reasoning fields replayed on assistant turns; ``pad`` sends the must-echo
    placeholder on turns without reasoning (``must_echo`` is the route's own rule under the
    user's ``echo`` option, before verdicts; ``family`` the must-echo family the route data
    matched, whatever ``echo`` says); ``native`` the provider-native carriers lifted onto the
    wire; ``body_extras`` the keep-thinking body fields and ``drop_params`` the parameters they
    forbid.
    """

    carriers: frozenset[str]
    pad: bool = False
    must_echo: bool = False
    echo: Echo = "auto"
    family: str | None = None
    native: frozenset[str] = frozenset()
    body_extras: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    drop_params: frozenset[str] = field(default=frozenset(), compare=False, hash=False)
    stream_usage: bool = True

    @property
    def echo_family(self) -> str | None:
        """The must-echo family in force (None when no placeholder is sent)."""
        return self.family if self.must_echo else None

    def with_echo(self, echo: Echo) -> ChatProfile:
        """The route under the user's must-echo option: ``always`` pads every assistant turn,
        ``never`` none, ``auto`` those of a must-echo family — only where the route reads
        ``reasoning_content``. Set once, when the route is resolved, before any verdict."""
        wants = echo == "always" or (echo == "auto" and self.family is not None)
        must_echo = wants and ECHO_CARRIER in self.carriers
        return replace(self, echo=echo, must_echo=must_echo, pad=must_echo)

    def narrowed(self, verdicts: Sequence[Verdict]) -> ChatProfile:
        carriers = set(self.carriers)
        pad = self.pad
        for verdict in verdicts:
            carriers -= verdict.drop
            pad = pad or verdict.pad
        # A learned pad only ever adds the placeholder where the route reads the field at all.
        pad = pad and ECHO_CARRIER in self.carriers and ECHO_CARRIER in carriers
        return replace(self, carriers=frozenset(carriers), pad=pad)

    def accepts(self, origin: Origin, target: Origin) -> bool:
        """Opaque Chat values (``reasoning_details`` items, Gemini and Copilot signatures) are bound
        to the service that issued them and the model that made them: the same host (or, with no
        host, the same provider id) and the same model — for Gemini models on a route that lifts
        Google signatures, a model of the same family and tier and project instead
        (``codecs/gemini/scope.py``, shared with the native Gemini route). A relay with the same
        provider id at another host cannot read them."""
        if "google" in self.native and scope.is_gemini(target.model):
            # Gemini signatures: the family-and-tier rule shared with the native Gemini route.
            if not (scope.can_read(origin.model, target.model)
                    and scope.same_project(origin, target)):
                return False
        elif origin.model.lower() != target.model.lower():
            return False
        if origin.host and target.host:
            return origin.host == target.host
        return origin.provider == target.provider

    def public_json(self) -> dict[str, Any]:
        return {"carriers": sorted(self.carriers), "must_echo": self.must_echo,
                "body_extras": dict(self.body_extras), "native": sorted(self.native)}

    def effective_json(self) -> dict[str, Any]:
        """What goes on the wire after verdicts: the carriers and whether the pad is sent."""
        return {"carriers": sorted(self.carriers), "must_echo": self.pad}

    def describe(self) -> list[str]:
        lines = []
        if self.carriers:
            lines.append("replayed on assistant turns: "
                         + ", ".join(carrier_words(c) for c in sorted(self.carriers)))
        else:
            lines.append("replayed on assistant turns: nothing — no reasoning fields are sent, "
                         "not even the placeholder")
        if self.must_echo:
            lines.append(f"must-echo ({self.echo_family}): every assistant turn carries "
                         f"{ECHO_CARRIER} — its reasoning, else a single-space placeholder \" \""
                         " — or the provider rejects tool-call turns")
        if self.body_extras:
            lines.append("keep-thinking body fields added to every request: "
                         + json.dumps(self.body_extras, separators=(", ", ": ")))
        for text in native_explanations(sorted(self.native)):
            lines.append(f"provider-native carrier: {text}")
        wants = self.echo == "always" or (self.echo == "auto" and self.family is not None)
        if wants and not self.must_echo:
            lines.append("must-echo family matched, but this route does not read "
                         "reasoning_content, so no placeholder is sent")
        if self.family is not None and self.echo == "never":
            lines.append(f"must-echo ({self.family}) switched off by echo = \"never\"")
        return lines


# --- the table's sections: conditions beside the rows -------------------------------------------
# Named tuples, not dataclasses: made once per process, when the first Chat route resolves, and a
# named tuple type is several times cheaper to create than a frozen dataclass (the table's six
# types cost a resumed Chat session about 6 ms before its first request on the benchmark machine).


class _Selector(NamedTuple):
    """A section entry's condition: a provider id or host, as rows match them, or (where the
    entry says so) a substring of the model id."""

    providers: frozenset[str] = frozenset()
    hosts: tuple[str, ...] = ()
    models_contain: tuple[str, ...] = ()

    def by_provider_or_host(self, provider: str, hostname: str) -> bool:
        return provider in self.providers or any(host_matches(hostname, h) for h in self.hosts)

    def by_model(self, model: str) -> bool:
        lowered = model.lower()
        return any(s in lowered for s in self.models_contain)


class _RowData(NamedTuple):
    """A row's ``profile``: the carriers it reads, and whether it asks for streamed usage."""

    carriers: frozenset[str]
    stream_usage: bool = True


class _KeepRule(NamedTuple):
    models: tuple[re.Pattern[str], ...]
    body: Mapping[str, Any]
    drop_params: frozenset[str] = frozenset()


class _Keep(NamedTuple):
    id: str
    select: _Selector
    rules: tuple[_KeepRule, ...]


class _Native(NamedTuple):
    id: str
    select: _Selector
    model_rows: frozenset[str]
    explain: str


class ChatTable(NamedTuple):
    """The Chat route table: its rows (``routes``) with each row's profile data, and the
    must-echo families, keep-thinking rules, native carriers and carrier words beside them."""

    routes: ApiTable
    rows: Mapping[str, _RowData]
    echo: tuple[tuple[str, _Selector], ...]
    keep: tuple[_Keep, ...]
    native: tuple[_Native, ...]
    carrier_words: Mapping[str, tuple[str, str]]


def _selector(raw: Mapping[str, Any]) -> _Selector:
    return _Selector(
        providers=frozenset(p.lower() for p in raw.get("providers", ())),
        hosts=tuple(h.lower() for h in raw.get("hosts", ())),
        models_contain=tuple(m.lower() for m in raw.get("models_contain", ())),
    )


def parse_table(raw: Mapping[str, Any]) -> ChatTable:
    """Build a table from its TOML data; raises ConfigError naming the bad entry."""
    routes = parse_api_table(API, raw)
    try:
        rows = {row.id: _RowData(carriers=frozenset(row.profile["carriers"]),
                                 stream_usage=bool(row.profile.get("stream_usage", True)))
                for row in routes.rows}
        echo = tuple((e["family"], _selector(e)) for e in raw.get("echo", ()))
        keep = tuple(
            _Keep(id=k["id"], select=_selector(k), rules=tuple(
                _KeepRule(models=tuple(re.compile(m, re.I) for m in rule["models"]),
                          body=rule["body"],
                          drop_params=frozenset(rule.get("drop_params", ())))
                for rule in k["rules"]))
            for k in raw.get("keep", ())
        )
        native = tuple(
            _Native(id=n["id"], select=_selector(n), model_rows=frozenset(n.get("model_rows", ())),
                    explain=n.get("explain", ""))
            for n in raw.get("native", ())
        )
        words = {name: (short, long) for name, (short, long) in
                 raw.get("carrier_words", {}).items()}
    except (KeyError, TypeError, ValueError, re.error) as exc:
        raise ConfigError(f"{API} route table entry is malformed: {exc!r}") from exc
    return ChatTable(routes=routes, rows=rows, echo=echo, keep=keep, native=native,
                     carrier_words=words)


@cache
def default_table() -> ChatTable:
    """The built-in table (``routes/openai-chat.toml``)."""
    return parse_table(tomllib.loads(packaged_text("thoughtline.routes", f"{API}.toml")))


# --- resolution ---------------------------------------------------------------------------------


def _echo_family(table: ChatTable, provider: str, hostname: str, model: str) -> str | None:
    for family, select in table.echo:
        if select.by_provider_or_host(provider, hostname) or select.by_model(model):
            return family
    return None


def _keep_rule(table: ChatTable, provider: str, hostname: str, model: str) -> _KeepRule | None:
    for keep in table.keep:
        if not keep.select.by_provider_or_host(provider, hostname):
            continue
        for rule in keep.rules:
            if any(p.search(model) for p in rule.models):
                return rule
    return None


def _native(table: ChatTable, row: str, provider: str, hostname: str, model: str) -> set[str]:
    return {
        n.id for n in table.native
        if n.select.by_provider_or_host(provider, hostname)
        or (row in n.model_rows and n.select.by_model(model))
    }


def resolve_chat(provider: str, base_url: str | None = None, model: str = "", *,
                 echo: Echo = "auto", table: ChatTable | None = None) -> Route:
    """Resolve a Chat Completions route. ``echo`` is the per-provider must-echo option."""
    if table is None:
        return _resolve_default(provider, base_url, model, echo)
    return _resolve(table, provider, base_url, model, echo)


@lru_cache(maxsize=256)
def _resolve_default(provider: str, base_url: str | None, model: str, echo: Echo) -> Route:
    """The built-in table's answer, remembered: every request resolves its route (a Route is
    immutable, so sharing one is safe)."""
    return _resolve(default_table(), provider, base_url, model, echo)


def _resolve(table: ChatTable, provider: str, base_url: str | None, model: str,
             echo: Echo) -> Route:
    provider_id = provider.strip().lower()
    hostname = hostname_of(base_url)
    row = table.routes.match(provider_id, base_url)
    data = table.rows[row.id]
    keep = _keep_rule(table, provider_id, hostname, model)
    profile = ChatProfile(
        carriers=data.carriers, family=_echo_family(table, provider_id, hostname, model),
        body_extras=dict(keep.body) if keep else {},
        drop_params=keep.drop_params if keep else frozenset(),
        native=frozenset(_native(table, row.id, provider_id, hostname, model)),
        stream_usage=data.stream_usage).with_echo(echo)
    return Route(row=row.id, api=API, provider=provider_id, host=hostname, model=model,
                 profile=profile, explain=row.explain)


def carrier_words(name: str, *, short: bool = False, table: ChatTable | None = None) -> str:
    """How to name a carrier to a user (short label or a few words)."""
    words = (table or default_table()).carrier_words.get(name)
    return name if words is None else words[0 if short else 1]


def native_explanations(ids: Sequence[str], table: ChatTable | None = None) -> list[str]:
    table = table or default_table()
    return [n.explain for n in table.native if n.id in ids]
