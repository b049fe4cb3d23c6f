"""Routes for every API: the generic ``Route``, host and path matching, and per-API route tables.

This module owns matching: hostnames (never substrings of a URL), URL path selectors, local-endpoint
detection, and the loading of one route table per API (``routes/<api>.toml``). What a row's
``profile`` means is the codec's business: each API's codec turns the row's data into its typed
``Profile`` (what that route reads back) and answers ``resolve`` for its API; a route for any API
is ``codecs.registry.resolve``. Nothing here imports a codec. Every table has the same row format
(``[[row]]``: id, providers, hosts, paths, catch_all, local_endpoint, explain, profile); an API's
other sections are its codec's to read.
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cache
from typing import Any, Literal, Protocol, TypeAlias
from urllib.parse import urlsplit

from thoughtline.errors import ConfigError
from thoughtline.messages import Origin
from thoughtline.packaged import packaged_text
from thoughtline.verdicts import Verdict

#: The user's must-echo option (``echo`` of a provider in config.toml, a gateway upstream or an
#: imported file): ``auto`` follows the route data, ``always`` / ``never`` override it. Only an
#: API with a must-echo rule (Chat) reads it.
Echo: TypeAlias = Literal["auto", "always", "never"]


class Profile(Protocol):
    """What a route of one API reads back; a frozen, hashable value from the route data.

    A profile class subclasses this protocol to inherit its defaults (``with_echo``,
    ``effective_json``).
    """

    __slots__ = ()

    def with_echo(self, echo: Echo) -> Profile:
        """This profile under the user's must-echo option, set once when the route is resolved
        (``codecs.registry.resolve``). A profile with no must-echo rule is unchanged."""
        return self

    def narrowed(self, verdicts: Sequence[Verdict]) -> Profile:
        """This profile after what was learned for exactly this route."""
        ...

    def accepts(self, origin: Origin, target: Origin) -> bool:
        """The signature scope: may an opaque value made at ``origin`` be sent to ``target``?"""
        ...

    def public_json(self) -> dict[str, Any]:
        """The fields ``routes --json`` reports for this profile."""
        ...

    def describe(self) -> list[str]:
        """What the route receives, in lines a user understands (``thoughtline routes``)."""
        ...

    def effective_json(self) -> dict[str, Any]:
        """What a narrowed profile sends (``routes --json``'s ``effective_*`` fields); by default
        its ``public_json``."""
        return self.public_json()


# What counts as a local endpoint: private (RFC 1918, IPv6 ULA), loopback, link-local and CGNAT.
# Deliberately not ``ip_address.is_private``, which also covers documentation and benchmark ranges.
_LOCAL_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"))


@dataclass(frozen=True, kw_only=True, slots=True)
class Route:
    """Where a request goes: the fields every API shares, and the API's own ``profile``.

    ``profile`` is the typed value the API's codec made from the route data (for Chat Completions
    the carriers, must-echo pad and keep-thinking fields; for Anthropic the thinking policy …).
    """

    row: str
    api: str
    provider: str
    host: str
    model: str
    profile: Profile
    path: str = ""
    explain: str = ""
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The public ``routes --json`` object (docs/cli.md)."""
        out: dict[str, Any] = {"route": self.row, "api": self.api, "carriers": [],
                               "must_echo": False, "body_extras": {}, "native": []}
        out.update(self.profile.public_json())
        return out


# --- host and path matching ---------------------------------------------------------------------


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


def path_of(base_url: str | None) -> str:
    """The URL path of a base URL, lower-cased ('' when there is none)."""
    if not base_url:
        return ""
    url = base_url.strip()
    if "://" not in url:
        url = "//" + url
    try:
        return urlsplit(url).path.lower()
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


def path_matches(path: str, selector: str) -> bool:
    """True when the URL path contains ``selector`` (``*`` is a wildcard, segments compared as
    written): ``/anthropic`` matches ``/anthropic/v1``; ``/publishers/anthropic/models/`` matches
    a Vertex model path."""
    selector = selector.lower()
    padded = path.rstrip("/") + "/"
    return fnmatchcase(padded, "*" + selector.rstrip("/") + "/*")


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


# --- per-API route tables -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiRow:
    """One row of an API's route table: how it is selected, and its raw ``profile`` data.

    ``local_endpoint``: the row an unmatched local endpoint (``is_local_endpoint``) gets instead
    of the catch-all; it is never matched by provider or host.
    """

    id: str
    providers: frozenset[str] = frozenset()
    hosts: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    catch_all: bool = False
    local_endpoint: bool = False
    explain: str = ""
    profile: Mapping[str, Any] = field(default_factory=dict)

    def matches(self, provider: str, hostname: str, path: str) -> bool:
        """Provider id listed, or host matched; and, when the row names paths, one of them."""
        if not (provider in self.providers or any(host_matches(hostname, h) for h in self.hosts)):
            return False
        return not self.paths or any(path_matches(path, p) for p in self.paths)


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiTable:
    """An API's rows in order (first match wins), the catch-all last, plus free-form sections."""

    api: str
    rows: tuple[ApiRow, ...]
    sections: Mapping[str, Any] = field(default_factory=dict)

    def match(self, provider: str, base_url: str | None) -> ApiRow:
        """The listed rows in order (the catch-all's own providers and hosts included); then,
        for a local endpoint, the ``local_endpoint`` row; then the catch-all row."""
        provider_id = provider.strip().lower()
        hostname, path = hostname_of(base_url), path_of(base_url)
        for row in self.rows:
            if not row.local_endpoint and row.matches(provider_id, hostname, path):
                return row
        if is_local_endpoint(hostname):
            local = next((row for row in self.rows if row.local_endpoint), None)
            if local is not None:
                return local
        return next(row for row in self.rows if row.catch_all)


def parse_api_table(api: str, raw: Mapping[str, Any]) -> ApiTable:
    """An API's table from its TOML data; raises ConfigError naming the bad entry."""
    try:
        rows = tuple(
            ApiRow(id=r["id"], providers=frozenset(p.lower() for p in r.get("providers", ())),
                   hosts=tuple(h.lower() for h in r.get("hosts", ())),
                   paths=tuple(r.get("paths", ())), catch_all=bool(r.get("catch_all", False)),
                   local_endpoint=bool(r.get("local_endpoint", False)),
                   explain=str(r.get("explain", "")), profile=dict(r.get("profile", {})))
            for r in raw["row"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{api} route table entry is malformed: {exc!r}") from exc
    if sum(r.catch_all for r in rows) != 1 or sum(r.local_endpoint for r in rows) > 1:
        raise ConfigError(f"{api} route table needs exactly one catch_all row and at most one "
                          "local_endpoint row")
    sections = {k: v for k, v in raw.items() if k != "row"}
    return ApiTable(api=api, rows=rows, sections=sections)


@cache
def api_table(api: str) -> ApiTable:
    """The built-in table of ``api`` (``routes/<api>.toml``)."""
    try:
        text = packaged_text("thoughtline.routes", f"{api}.toml")
    except FileNotFoundError as exc:
        raise ConfigError(f"no route table for API {api!r}") from exc
    return parse_api_table(api, tomllib.loads(text))

