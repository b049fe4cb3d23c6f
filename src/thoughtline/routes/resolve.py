"""Resolve (provider id, base URL, model) to a route, from the route table data.

This module owns matching: hostnames (never substrings of a URL), local-endpoint detection and the
model conditions of the table. It knows no carrier semantics beyond reading them from the table;
what a carrier means on the wire is the codec's business.
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal, TypeAlias
from urllib.parse import urlsplit

from thoughtline.errors import ConfigError

Echo: TypeAlias = Literal["auto", "always", "never"]
ECHO_CARRIER = "reasoning_content"
# What counts as a local endpoint: private (RFC 1918, IPv6 ULA), loopback, link-local and CGNAT.
# Deliberately not ``ip_address.is_private``, which also covers documentation and benchmark ranges.
_LOCAL_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"))


@dataclass(frozen=True, kw_only=True, slots=True)
class Route:
    """Everything the replay policy and the codec need to know about where a request goes."""

    row: str
    api: str
    provider: str
    host: str
    model: str
    carriers: frozenset[str]
    must_echo: bool = False
    echo_family: str | None = None
    body_extras: Mapping[str, Any] = field(default_factory=dict)
    drop_params: frozenset[str] = frozenset()  # request parameters the keep-thinking rule forbids
    native: frozenset[str] = frozenset()
    stream_usage: bool = True  # may the request ask for usage on streams (stream_options)
    explain: str = ""
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The public ``routes --json`` object (design.md §3.2)."""
        return {
            "route": self.row,
            "api": self.api,
            "carriers": sorted(self.carriers),
            "must_echo": self.must_echo,
            "body_extras": dict(self.body_extras),
            "native": sorted(self.native),
        }


# --- host matching ------------------------------------------------------------------------------


def hostname_of(base_url: str | None) -> str:
    """The lower-cased hostname of a base URL ('' when there is none)."""
    if not base_url:
        return ""
    url = base_url.strip()
    if "://" not in url:
        url = "//" + url
    try:
        return (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return ""


@cache
def _host_pattern(entry: str) -> re.Pattern[str]:
    labels = [r"[^.]*".join(re.escape(piece) for piece in label.split("*"))
              for label in entry.split(".")]
    return re.compile(r"(?:.+\.)?" + r"\.".join(labels))


def host_matches(hostname: str, entry: str) -> bool:
    """True when ``hostname`` is ``entry`` or a subdomain of it.

    ``*`` matches within one DNS label only: ``token-plan.*.maas.aliyuncs.com`` or
    ``*-aiplatform.googleapis.com``.
    """
    if not hostname:
        return False
    entry = entry.lower()
    if "*" in entry:
        return _host_pattern(entry).fullmatch(hostname) is not None
    return hostname == entry or hostname.endswith("." + entry)


def is_local_endpoint(hostname: str) -> bool:
    """Loopback, private, link-local and CGNAT addresses, and localhost names."""
    if not hostname:
        return False
    if hostname == "localhost" or hostname.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(hostname.strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return (address.is_loopback or address.is_link_local
            or any(address in network for network in _LOCAL_NETWORKS
                   if network.version == address.version))


# --- the table ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class _Selector:
    providers: frozenset[str] = frozenset()
    hosts: tuple[str, ...] = ()
    models_contain: tuple[str, ...] = ()

    def by_provider_or_host(self, provider: str, hostname: str) -> bool:
        return provider in self.providers or any(host_matches(hostname, h) for h in self.hosts)

    def by_model(self, model: str) -> bool:
        lowered = model.lower()
        return any(s in lowered for s in self.models_contain)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Row:
    id: str
    carriers: frozenset[str]
    select: _Selector
    local_endpoint: bool = False
    catch_all: bool = False
    stream_usage: bool = True
    explain: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class _KeepRule:
    models: tuple[re.Pattern[str], ...]
    body: Mapping[str, Any]
    drop_params: frozenset[str] = frozenset()


@dataclass(frozen=True, kw_only=True, slots=True)
class _Keep:
    id: str
    select: _Selector
    rules: tuple[_KeepRule, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class _Native:
    id: str
    select: _Selector
    model_rows: frozenset[str]
    explain: str


@dataclass(frozen=True, kw_only=True, slots=True)
class RouteTable:
    rows: tuple[_Row, ...]
    echo: tuple[tuple[str, _Selector], ...]
    keep: tuple[_Keep, ...]
    native: tuple[_Native, ...]
    carrier_words: Mapping[str, tuple[str, str]] = field(default_factory=dict)


def _selector(raw: Mapping[str, Any]) -> _Selector:
    return _Selector(
        providers=frozenset(p.lower() for p in raw.get("providers", ())),
        hosts=tuple(h.lower() for h in raw.get("hosts", ())),
        models_contain=tuple(m.lower() for m in raw.get("models_contain", ())),
    )


def parse_table(raw: Mapping[str, Any]) -> RouteTable:
    """Build a table from its TOML data; raises ConfigError naming the bad entry."""
    try:
        rows = tuple(
            _Row(id=r["id"], carriers=frozenset(r["carriers"]), select=_selector(r),
                 local_endpoint=bool(r.get("local_endpoint", False)),
                 catch_all=bool(r.get("catch_all", False)),
                 stream_usage=bool(r.get("stream_usage", True)), explain=r.get("explain", ""))
            for r in raw["row"]
        )
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
        raise ConfigError(f"route table entry is malformed: {exc!r}") from exc
    if sum(r.catch_all for r in rows) != 1 or sum(r.local_endpoint for r in rows) > 1:
        raise ConfigError("route table needs exactly one catch_all row and at most one "
                          "local_endpoint row")
    return RouteTable(rows=rows, echo=echo, keep=keep, native=native, carrier_words=words)


@cache
def default_table() -> RouteTable:
    text = resources.files("thoughtline.routes").joinpath("table.toml").read_text("utf-8")
    return parse_table(tomllib.loads(text))


# --- resolution ---------------------------------------------------------------------------------


def _match_row(table: RouteTable, provider: str, hostname: str) -> _Row:
    """Listed rows in order; then the local-endpoint row; then the catch-all row."""
    for row in table.rows:
        if not row.local_endpoint and row.select.by_provider_or_host(provider, hostname):
            return row
    if is_local_endpoint(hostname):
        local = next((row for row in table.rows if row.local_endpoint), None)
        if local is not None:
            return local
    return next(row for row in table.rows if row.catch_all)


def _echo_family(table: RouteTable, provider: str, hostname: str, model: str) -> str | None:
    for family, select in table.echo:
        if select.by_provider_or_host(provider, hostname) or select.by_model(model):
            return family
    return None


def _keep_rule(table: RouteTable, provider: str, hostname: str, model: str) -> _KeepRule | None:
    for keep in table.keep:
        if not keep.select.by_provider_or_host(provider, hostname):
            continue
        for rule in keep.rules:
            if any(p.search(model) for p in rule.models):
                return rule
    return None


def _native(table: RouteTable, row: str, provider: str, hostname: str, model: str) -> set[str]:
    return {
        n.id for n in table.native
        if n.select.by_provider_or_host(provider, hostname)
        or (row in n.model_rows and n.select.by_model(model))
    }


def resolve(provider: str, base_url: str | None = None, model: str = "", *,
            echo: Echo = "auto", table: RouteTable | None = None) -> Route:
    """Resolve a Chat Completions route. ``echo`` is the per-provider must-echo override."""
    table = table or default_table()
    provider_id = provider.strip().lower()
    hostname = hostname_of(base_url)
    row = _match_row(table, provider_id, hostname)
    family = _echo_family(table, provider_id, hostname, model)
    keep = _keep_rule(table, provider_id, hostname, model)
    wants_echo = echo == "always" or (echo == "auto" and family is not None)
    notes: list[str] = []
    must_echo = wants_echo and ECHO_CARRIER in row.carriers
    if wants_echo and not must_echo:
        notes.append("must-echo family matched, but this route does not read reasoning_content, "
                     "so no placeholder is sent")
    if family is not None and echo == "never":
        notes.append(f"must-echo ({family}) switched off by echo = \"never\"")
    return Route(
        row=row.id, api="openai-chat", provider=provider_id, host=hostname, model=model,
        carriers=row.carriers, must_echo=must_echo, echo_family=family if must_echo else None,
        body_extras=dict(keep.body) if keep else {},
        drop_params=keep.drop_params if keep else frozenset(),
        native=frozenset(_native(table, row.id, provider_id, hostname, model)),
        stream_usage=row.stream_usage, explain=row.explain, notes=tuple(notes),
    )


def carrier_words(name: str, *, short: bool = False, table: RouteTable | None = None) -> str:
    """How to name a carrier to a user (short label or a few words)."""
    words = (table or default_table()).carrier_words.get(name)
    return name if words is None else words[0 if short else 1]


def native_explanations(ids: Sequence[str], table: RouteTable | None = None) -> list[str]:
    table = table or default_table()
    return [n.explain for n in table.native if n.id in ids]
