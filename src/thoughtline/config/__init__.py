"""Where thoughtline keeps its state, and which providers it can talk to.

Owns ``THOUGHTLINE_HOME`` resolution, the built-in presets (``presets.toml``) and the named
providers of ``config.toml``. API keys are looked up in the environment when a request is made and
are never stored anywhere.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypedDict

from thoughtline.errors import ConfigError, HomeError, UsageError
from thoughtline.packaged import packaged_text

DEMO_PROVIDER = "demo"
#: Where ``--provider demo`` chats: a Chat Completions emulator on a loopback port picked when
#: it starts (so it routes as a local endpoint; the URL here stands for that one).
DEMO_BASE_URL = "http://127.0.0.1/v1"
_ECHO_VALUES = ("auto", "always", "never")
_TimeoutName = Literal["connect_timeout", "read_timeout", "first_byte_timeout"]
_TIMEOUTS: tuple[_TimeoutName, ...] = ("connect_timeout", "read_timeout", "first_byte_timeout")
_TEXT_FIELDS = ("api", "base_url", "api_key_env", "key_env", "model", "region", "preset",
                "route_as", "auth", "project")


def home(override: str | os.PathLike[str] | None = None) -> Path:
    """``--home``, else ``$THOUGHTLINE_HOME``, else ``~/.thoughtline``."""
    raw = override or os.environ.get("THOUGHTLINE_HOME") or Path.home() / ".thoughtline"
    return Path(raw).expanduser()


def ensure_home(path: Path) -> Path:
    """Create the home (owner-only) if needed; a clear ``HomeError`` when it cannot be used."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except FileExistsError as exc:
        raise HomeError(f"the thoughtline home {path} exists but is not a directory; point "
                        "--home or THOUGHTLINE_HOME at a directory") from exc
    except OSError as exc:
        raise HomeError(f"cannot create the thoughtline home {path}: "
                        f"{exc.strerror or exc}. Use --home DIR or set THOUGHTLINE_HOME to a "
                        "writable directory") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise HomeError(f"the thoughtline home {path} is not writable; use --home DIR or set "
                        "THOUGHTLINE_HOME to a writable directory")
    return path


def check_base_url(url: str) -> str:
    """``url`` when it is an http(s) URL with a host and a valid port; else a ``UsageError``.

    Checked before anything is sent: a typo is a usage error (exit 2), not a retried request.
    """
    from urllib.parse import urlsplit

    problem = ""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError when out of range or not a number
    except ValueError as exc:
        parts, port, problem = None, None, str(exc)
    if parts is not None and not problem:
        if parts.scheme not in ("http", "https"):
            problem = "it must start with http:// or https://"
        elif not parts.hostname:
            problem = "it has no host"
        elif port == 0:
            problem = "port 0 is not a port"
        elif any(c.isspace() for c in url):
            problem = "it contains whitespace"
    if problem:
        raise UsageError(f"invalid --base-url {url!r}: {problem} "
                         "(for example https://api.example.com/v1)")
    return url


class Timeouts(TypedDict, total=False):
    """The timeouts a provider sets, in seconds, by their ``TransportConfig`` field names."""

    connect_timeout: float
    read_timeout: float
    first_byte_timeout: float


@dataclass(frozen=True, kw_only=True, slots=True)
class ProviderConfig:
    """One provider as a session will use it. ``key_env`` names a variable; never the key."""

    id: str
    api: str = "openai-chat"
    base_url: str = ""
    key_env: str = ""
    model: str = ""
    echo: str = "auto"
    region: str = ""
    #: Extra request headers from config.toml. Kept in memory only (they may hold secrets): they
    #: are reloaded from config on create and resume, never stored.
    headers: Mapping[str, str] | None = field(default=None, compare=False)
    route_as: str = ""  # the provider id route rules key on, when it is not ``id``
    #: How requests authenticate (a ``codecs.base.AuthScheme``); "" lets the API's codec choose.
    auth: str = ""
    #: The cloud project a platform route needs in its URL (Vertex), when it has one.
    project: str = ""
    #: Seconds; 0 means the transport's default. ``first_byte_timeout`` bounds the wait for the
    #: response to start (a provider that accepts the connection and never answers).
    connect_timeout: float = 0.0
    read_timeout: float = 0.0
    first_byte_timeout: float = 0.0

    @property
    def route_id(self) -> str:
        """The id the route table matches: a named provider built on a preset routes as it."""
        return self.route_as or self.id

    def api_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        if not self.key_env:
            return None
        env = os.environ if environ is None else environ
        return env.get(self.key_env) or None

    def timeouts(self) -> Timeouts:
        """The timeouts this provider sets (the transport keeps its defaults for the rest)."""
        out = Timeouts()
        for name in _TIMEOUTS:
            if value := getattr(self, name):
                out[name] = value
        return out

    def to_json(self) -> dict[str, Any]:
        """The stored form (model config): names only, never a key."""
        out: dict[str, Any] = {"id": self.id, "api": self.api, "base_url": self.base_url,
                               "key_env": self.key_env, "model": self.model, "echo": self.echo}
        for name in ("region", "route_as", "auth", "project"):
            value = getattr(self, name)
            if value:
                out[name] = value
        out.update(self.timeouts())
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ProviderConfig:
        timeouts = Timeouts()
        for name in _TIMEOUTS:
            if isinstance(raw.get(name), int | float):
                timeouts[name] = float(raw[name])
        return cls(id=raw["id"], api=raw.get("api", "openai-chat"),
                   base_url=raw.get("base_url", ""), key_env=raw.get("key_env", ""),
                   model=raw.get("model", ""), echo=raw.get("echo", "auto"),
                   region=raw.get("region", ""), route_as=raw.get("route_as", ""),
                   auth=raw.get("auth", ""), project=raw.get("project", ""), **timeouts)


@cache
def presets() -> dict[str, ProviderConfig]:
    text = packaged_text("thoughtline.config", "presets.toml")
    return {name: _provider(name, raw) for name, raw in tomllib.loads(text).items()}


def _provider(name: str, raw: Mapping[str, Any]) -> ProviderConfig:
    for key in _TEXT_FIELDS:
        if not isinstance(raw.get(key, ""), str):
            raise ConfigError(f"provider {name!r}: {key} must be a string, not {raw[key]!r}")
    timeouts = Timeouts()
    for key in _TIMEOUTS:
        value = raw.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(f"provider {name!r}: {key} must be a number of seconds, "
                              f"not {value!r}")
        timeouts[key] = float(value)
    echo = raw.get("echo", "auto")
    if echo not in _ECHO_VALUES:
        raise ConfigError(f"provider {name!r}: echo must be one of {', '.join(_ECHO_VALUES)}, "
                          f"not {echo!r}")
    return ProviderConfig(
        id=name, api=raw.get("api", "openai-chat"), base_url=raw.get("base_url", ""),
        key_env=raw.get("api_key_env", raw.get("key_env", "")), model=raw.get("model", ""),
        echo=echo, region=raw.get("region", ""), headers=raw.get("headers"),
        route_as=raw.get("route_as", "").lower(), auth=raw.get("auth", ""),
        project=raw.get("project", ""), **timeouts,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Config:
    """``config.toml``: optional defaults and named providers."""

    default_provider: str = ""
    default_model: str = ""
    providers: Mapping[str, ProviderConfig] | None = None


def load_config(home_dir: Path) -> Config:
    path = home_dir / "config.toml"
    if not path.exists():
        return Config(providers={})
    try:
        raw = tomllib.loads(path.read_text("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (undecodable byte at offset {exc.start}); "
                          "save it as UTF-8") from exc
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    named = raw.get("providers", {})
    if not isinstance(named, Mapping):
        raise ConfigError(f"{path}: [providers] must be a table of named providers")
    providers = {}
    for name, entry in named.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{path}: [providers.{name}] must be a table, not {entry!r}")
        preset = entry.get("preset", "")
        base = presets().get(preset) if preset else None
        if preset and base is None:
            raise ConfigError(f"{path}: [providers.{name}] names an unknown preset {preset!r}. "
                              f"Presets: {', '.join(sorted(presets()))}")
        merged = {**(base.to_json() if base else {}), **entry}
        if base is not None and "route_as" not in entry:
            merged["route_as"] = base.route_id  # built on a preset: route rules keyed on its id
        providers[name.lower()] = _provider(name.lower(), merged)
    defaults = raw.get("defaults", {})
    if not isinstance(defaults, Mapping):
        raise ConfigError(f"{path}: [defaults] must be a table")
    return Config(default_provider=str(defaults.get("provider", "")),
                  default_model=str(defaults.get("model", "")), providers=providers)


def headers_for(provider_id: str, config: Config | None) -> Mapping[str, str] | None:
    """The configured extra headers of a provider (presets have none), looked up afresh."""
    named = (config.providers or {}) if config else {}
    found = named.get(provider_id.strip().lower())
    return found.headers if found is not None else None


def provider(provider_id: str, config: Config | None = None, *, base_url: str | None = None,
             model: str | None = None, key_env: str | None = None) -> ProviderConfig:
    """Look up a preset or named provider and apply command-line overrides."""
    wanted = provider_id.strip().lower()
    named = (config.providers or {}) if config else {}
    found = named.get(wanted) or presets().get(wanted)
    if found is None:
        if wanted == DEMO_PROVIDER:
            found = ProviderConfig(id=DEMO_PROVIDER, base_url=DEMO_BASE_URL,
                                   model="demo-reasoner")
        else:
            known = ", ".join(sorted({*presets(), *named, DEMO_PROVIDER}))
            raise UsageError(f"unknown provider {provider_id!r}. Known providers: {known}. "
                             "Define your own under [providers.NAME] in config.toml.")
    changes: dict[str, Any] = {}
    if base_url:
        changes["base_url"] = check_base_url(base_url)
    if model:
        changes["model"] = model
    if key_env:
        changes["key_env"] = key_env
    return replace(found, **changes) if changes else found
