"""Platforms: where a provider's requests go and how they authenticate, resolved in one place.

A platform (the Anthropic API, Bedrock's runtime and Messages endpoints, Claude Platform on AWS,
Vertex, AI Studio, Foundry, OpenAI-compatible endpoints) owns the base URL, the region or
project/location and the credential scheme, from ``routes/platforms.toml`` and the provider's
config; a codec names its platform and adds only its API's path. pydantic-ai's providers draw the
same line (a provider holds the URL, region and credentials; a model class speaks the API).

One AWS region rule (the provider's ``region``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``:
botocore's order) with one error message, and one Vertex rule (the provider's ``region`` as the
location, the host that location is served from, the project the path is scoped to).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, TypeAlias, get_args
from urllib.parse import urlsplit

from thoughtline.config import ProviderConfig
from thoughtline.errors import ConfigError, UsageError
from thoughtline.packaged import packaged_text
from thoughtline.routes.resolve import host_matches, hostname_of

RegionRule: TypeAlias = Literal["", "aws", "vertex"]
#: The variables botocore reads a region from, in its order (after the provider's own ``region``).
AWS_REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")
NO_AWS_REGION = ("no AWS region: set region under [providers.NAME] in config.toml, or "
                 "AWS_REGION / AWS_DEFAULT_REGION")


@dataclass(frozen=True, kw_only=True, slots=True)
class PlatformFacts:
    """One row of ``routes/platforms.toml``."""

    name: str
    url: str = ""
    auth: str = ""
    region: RegionRule = ""
    location: str = ""
    hosts: tuple[str, ...] = ()
    global_host: str = ""
    multi_region: Mapping[str, str] = field(default_factory=dict)
    regional_host: str = ""

    @classmethod
    def from_row(cls, name: str, raw: Mapping[str, Any]) -> PlatformFacts:
        region = raw.get("region", "")
        if region not in get_args(RegionRule):
            raise ConfigError(f"platform {name!r}: region rule {region!r} is not one of "
                              f"{get_args(RegionRule)}")
        try:
            return cls(name=name, url=str(raw.get("url", "")), auth=str(raw.get("auth", "")),
                       region=region, location=str(raw.get("location", "")),
                       hosts=tuple(str(h) for h in raw.get("hosts", ())),
                       global_host=str(raw.get("global_host", "")),
                       multi_region={str(k): str(v)
                                     for k, v in raw.get("multi_region", {}).items()},
                       regional_host=str(raw.get("regional_host", "")))
        except (AttributeError, TypeError) as exc:
            raise ConfigError(f"platform {name!r}: malformed row ({exc})") from exc

    def host_for(self, location: str) -> str:
        """The Vertex host serving ``location`` (global, multi-region or regional)."""
        if location == "global":
            return self.global_host
        return self.multi_region.get(location) or self.regional_host.format(location=location)


@cache
def table() -> Mapping[str, PlatformFacts]:
    raw = tomllib.loads(packaged_text("thoughtline.routes", "platforms.toml"))
    return {name: PlatformFacts.from_row(name, row) for name, row in raw.items()}


def facts(name: str) -> PlatformFacts:
    found = table().get(name)
    if found is None:
        raise ConfigError(f"unknown platform {name!r}; known: {', '.join(sorted(table()))}")
    return found


def on_platform(base_url: str, name: str) -> bool:
    """True when ``base_url``'s host is one of platform ``name``'s hosts."""
    host = hostname_of(base_url)
    return any(host_matches(host, h) for h in facts(name).hosts)


def aws_region(provider: ProviderConfig, environ: Mapping[str, str] | None = None) -> str:
    """The AWS region: the provider's ``region``, else ``AWS_REGION``, else
    ``AWS_DEFAULT_REGION`` ("" when none is set)."""
    env = os.environ if environ is None else environ
    return provider.region or next((env[v] for v in AWS_REGION_VARIABLES if env.get(v)), "")


def require_project(provider: ProviderConfig) -> str:
    if not provider.project:
        raise UsageError(f"provider {provider.id!r}: Vertex needs a project: set project = "
                         f"\"…\" under [providers.NAME] (preset = \"{provider.route_id}\") in "
                         "config.toml")
    return provider.project


@dataclass(frozen=True, kw_only=True, slots=True)
class Place:
    """A provider on a platform: what a codec needs to address and sign its requests."""

    platform: PlatformFacts
    provider: ProviderConfig
    #: The base URL: the provider's own (``--base-url``, config), else the platform's.
    base: str
    #: The AWS region or the Vertex location ("" when the platform has neither).
    region: str
    #: The credential scheme: the provider's ``auth``, else the platform's ("" = the API's own).
    auth: str

    def scoped(self, *, version: str = "v1") -> str:
        """The base scoped to ``…/projects/{project}/locations/{location}`` (Vertex), the host
        moved from the global one to the location's; unchanged when it is already scoped."""
        parts = urlsplit(self.base)
        path = parts.path.rstrip("/")
        if "/projects/" in path:
            return self.base
        project = require_project(self.provider)
        host = parts.netloc
        if hostname_of(self.base) == self.platform.global_host and self.region != "global":
            host = self.platform.host_for(self.region)
        return (f"{parts.scheme}://{host}{path or '/' + version}/projects/{project}"
                f"/locations/{self.region}")


def locate(provider: ProviderConfig, platform: str, *,
           environ: Mapping[str, str] | None = None) -> Place:
    """Where ``provider``'s requests go on ``platform``; a ``UsageError`` naming what is missing
    (a region, a base URL) when the address cannot be made."""
    found = facts(platform)
    region = _region(provider, found, environ)
    base = provider.base_url.rstrip("/")
    if not base:
        if "{region}" in found.url and not region:
            raise UsageError(NO_AWS_REGION)
        base = found.url.format(region=region, host=found.host_for(region) if region else "")
    if not base:
        raise UsageError(f"provider {provider.id!r} has no base URL: pass --base-url or set "
                         f"base_url under [providers.{provider.id}] in config.toml")
    return Place(platform=found, provider=provider, base=base, region=region,
                 auth=provider.auth or found.auth)


def default_url(provider: ProviderConfig, platform: str, *,
                environ: Mapping[str, str] | None = None) -> str:
    """The URL requests go to without ``--base-url``, ``{region}`` left in when no region is
    set (what ``thoughtline routes`` shows; ``locate`` insists on one)."""
    if provider.base_url:
        return provider.base_url
    found = facts(platform)
    region = _region(provider, found, environ)
    return found.url.format(region=region or "{region}",
                            host=found.host_for(region) if region else "{host}")


def _region(provider: ProviderConfig, found: PlatformFacts,
            environ: Mapping[str, str] | None) -> str:
    if found.region == "aws":
        return aws_region(provider, environ)
    if found.region == "vertex":
        return provider.region or found.location
    return provider.region
