"""``gateway.toml`` and the ``serve`` flags: the server settings and the upstreams, validated.

Owns the file's shape (docs/gateway.md): ``[server]`` (host, port, tokens_env, max_body_bytes,
max_items, access_log, store, metrics_public), ``[[upstream]]`` tables (name, provider, base_url,
api_key_env, api, models, allow_any_model, route_as, echo, region, auth, and the upstream's own
connect_timeout, read_timeout, first_byte_timeout and max_connections) and ``[aliases]`` (a
client's model name, or ``"*"`` for any other name, → ``upstream/model``, for clients that cannot
choose model names freely). Each upstream becomes a ``ProviderConfig`` built on the provider's
preset when there is one. Keys are never read here: only the *names* of their variables.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from thoughtline import config as config_mod
from thoughtline.codecs import registry
from thoughtline.errors import ConfigError, UsageError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
DEFAULT_TOKENS_ENV = "THOUGHTLINE_GATEWAY_TOKENS"
DEFAULT_MAX_BODY = 32 * 1024 * 1024
#: Messages (input items) one request may carry: about fifty times what Claude Code sends when
#: it compacts at its 200k-token window (~1,200 messages), so only a runaway or hostile client
#: meets it, and a 200,000-message body is refused before it is matched, priced or sent.
DEFAULT_MAX_ITEMS = 50_000
CONFIG_NAME = "gateway.toml"

_SERVER_KEYS = frozenset({"host", "port", "tokens_env", "max_body_bytes", "max_items",
                          "access_log", "store", "metrics_public"})
_TIMEOUT_KEYS = ("connect_timeout", "read_timeout", "first_byte_timeout")
_UPSTREAM_KEYS = frozenset({"name", "provider", "base_url", "api_key_env", "api", "models",
                            "allow_any_model", "route_as", "echo", "region", "auth", "model",
                            "max_connections", *_TIMEOUT_KEYS})
DEFAULT_MAX_CONNECTIONS = 100


@dataclass(frozen=True, kw_only=True, slots=True)
class Upstream:
    """One upstream: requests for ``<name>/<model>`` go to ``provider`` with that model."""

    name: str
    provider: config_mod.ProviderConfig
    models: tuple[str, ...] = ()
    #: False when ``models`` was listed: any other model id is refused (404) before it is sent.
    allow_any_model: bool = True
    #: This upstream's own pool: one hung upstream cannot take another's connections.
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    def for_model(self, model: str) -> config_mod.ProviderConfig:
        return replace(self.provider, model=model or self.provider.model)

    def serves(self, model: str) -> bool:
        return self.allow_any_model or model in self.models


@dataclass(frozen=True, kw_only=True, slots=True)
class GatewayConfig:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    tokens_env: str = DEFAULT_TOKENS_ENV
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_items: int = DEFAULT_MAX_ITEMS
    #: "" or "-": stderr; else a file path the access log is appended to.
    access_log: str = ""
    #: A store path or postgresql:// URL; "" means the default store of the home.
    store: str = ""
    #: True: ``GET /metrics`` answers without a token (else it needs one of the tokens).
    metrics_public: bool = False
    upstreams: Mapping[str, Upstream] = field(default_factory=dict)
    #: Client model names (``"*"``: any name nothing else resolves) → ``upstream/model``.
    aliases: Mapping[str, str] = field(default_factory=dict)
    source: str = ""

    def with_flags(self, *, host: str | None = None, port: int | None = None) -> GatewayConfig:
        return replace(self, host=host if host is not None else self.host,
                       port=port if port is not None else self.port)

    def tokens(self, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """The configured bearer tokens (each one a tenant), from ``tokens_env``."""
        raw = (os.environ if environ is None else environ).get(self.tokens_env, "")
        return tuple(dict.fromkeys(t.strip() for t in raw.split(",") if t.strip()))

    def upstream_for(self, model: str) -> tuple[Upstream, str]:
        """The upstream and upstream model id for a request's ``model``: an alias, else
        ``<upstream>/<model>`` (split at the first /), else the ``"*"`` alias."""
        aliased = self.aliases.get(model)
        if aliased is not None:
            model = aliased
        name, slash, rest = model.partition("/")
        found = self.upstreams.get(name) if slash else None
        if found is None and "*" in self.aliases and aliased is None:
            return self.upstream_for(self.aliases["*"])
        if found is None and not slash and len(self.upstreams) == 1:
            found = next(iter(self.upstreams.values()))  # one upstream: a bare id is its model
            rest = model if model != found.name else found.provider.model
        if found is None:
            known = ", ".join([*(f"{u}/<model>" for u in sorted(self.upstreams)),
                               *sorted(a for a in self.aliases if a != "*")])
            raise UsageError(f"model {model!r} names no configured upstream or alias; use one "
                             f"of: {known}")
        if not found.serves(rest):
            listed = ", ".join(f"{found.name}/{m}" for m in found.models)
            raise UsageError(f"model {model!r} is not one of upstream {found.name!r}'s models "
                             f"({listed}); set allow_any_model = true in its [[upstream]] to "
                             "pass other ids on")
        return found, rest


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(config: GatewayConfig, environ: Mapping[str, str] | None = None) -> None:
    """Refuse a non-loopback bind without bearer tokens (anyone could spend the upstream key)."""
    if not is_loopback(config.host) and not config.tokens(environ):
        raise UsageError(
            f"refusing to listen on {config.host}: it is not a loopback address and no bearer "
            f"tokens are configured, so anyone who can reach it could use your upstream keys. "
            f"Set {config.tokens_env}=token1,token2 (each token is a tenant), or bind 127.0.0.1.")


def default_path(home: Path) -> Path:
    return home / CONFIG_NAME


def load(path: Path) -> GatewayConfig:
    try:
        raw = tomllib.loads(path.read_text("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (undecodable byte at offset {exc.start}); "
                          "save it as UTF-8") from None
    except FileNotFoundError:
        raise ConfigError(f"no gateway config at {path}: create it (see 'thoughtline serve "
                          "--help' and docs/gateway.md) or pass --config FILE") \
            from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    return parse(raw, source=str(path))


def parse(raw: Mapping[str, Any], *, source: str = "gateway.toml") -> GatewayConfig:
    server = raw.get("server", {})
    if not isinstance(server, Mapping):
        raise ConfigError(f"{source}: [server] must be a table")
    _unknown(source, "[server]", server, _SERVER_KEYS)
    entries = raw.get("upstream", [])
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{source}: define at least one [[upstream]] table "
                          "(name, provider, base_url, api_key_env)")
    upstreams: dict[str, Upstream] = {}
    for index, entry in enumerate(entries):
        upstream = _upstream(source, index, entry)
        if upstream.name in upstreams:
            raise ConfigError(f"{source}: two upstreams are named {upstream.name!r}")
        upstreams[upstream.name] = upstream
    return GatewayConfig(
        aliases=_aliases(source, raw.get("aliases", {}), upstreams),
        host=_text(source, "server.host", server.get("host", DEFAULT_HOST)),
        port=_int(source, "server.port", server.get("port", DEFAULT_PORT), low=0, high=65535),
        tokens_env=_text(source, "server.tokens_env",
                         server.get("tokens_env", DEFAULT_TOKENS_ENV)),
        max_body_bytes=_int(source, "server.max_body_bytes",
                            server.get("max_body_bytes", DEFAULT_MAX_BODY), low=1),
        max_items=_int(source, "server.max_items", server.get("max_items", DEFAULT_MAX_ITEMS),
                       low=1),
        access_log=_text(source, "server.access_log", server.get("access_log", "")),
        store=_text(source, "server.store", server.get("store", "")),
        metrics_public=_bool(source, "server.metrics_public", server.get("metrics_public", False)),
        upstreams=upstreams, source=source)


def _upstream(source: str, index: int, entry: Any) -> Upstream:
    where = f"[[upstream]] #{index + 1}"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{source}: {where} must be a table")
    _unknown(source, where, entry, _UPSTREAM_KEYS)
    name = _text(source, f"{where}.name", entry.get("name", ""))
    if not name or "/" in name:
        raise ConfigError(f"{source}: {where} needs a name without '/' (requests use "
                          "'<name>/<model>')")
    provider_id = _text(source, f"{where}.provider", entry.get("provider", "")).lower()
    if not provider_id:
        raise ConfigError(f"{source}: {where} ({name}) needs a provider id")
    base = config_mod.presets().get(provider_id)
    base_url = _text(source, f"{where}.base_url", entry.get("base_url", ""))
    if base is None and not base_url:
        raise ConfigError(f"{source}: upstream {name!r}: provider {provider_id!r} is not a "
                          "preset, so it needs base_url (and api, unless it is Chat Completions)")
    provider = base or config_mod.ProviderConfig(id=provider_id)
    changes: dict[str, Any] = {}
    for key, attr in (("base_url", "base_url"), ("api_key_env", "key_env"), ("api", "api"),
                      ("route_as", "route_as"), ("echo", "echo"), ("region", "region"),
                      ("auth", "auth"), ("model", "model")):
        value = _text(source, f"{where}.{key}", entry.get(key, ""))
        if value:
            changes[attr] = value.lower() if key == "route_as" else value
    api = changes.get("api", provider.api)
    if api not in registry.apis():
        raise ConfigError(f"{source}: upstream {name!r}: api {api!r} is not one thoughtline "
                          f"speaks; use one of: {', '.join(registry.apis())}")
    for key in _TIMEOUT_KEYS:
        if key in entry:
            changes[key] = _seconds(source, f"upstream {name!r}: {key}", entry[key])
    models = entry.get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) and m for m in models):
        raise ConfigError(f"{source}: upstream {name!r}: models must be a list of model ids")
    allow_any = entry.get("allow_any_model", not models)
    if not isinstance(allow_any, bool):
        raise ConfigError(f"{source}: upstream {name!r}: allow_any_model must be true or false, "
                          f"not {allow_any!r}")
    provider = replace(provider, **changes)
    listed = tuple(models) or ((provider.model,) if provider.model else ())
    return Upstream(name=name, provider=provider, models=listed, allow_any_model=allow_any,
                    max_connections=_int(source, f"upstream {name!r}: max_connections",
                                         entry.get("max_connections", DEFAULT_MAX_CONNECTIONS),
                                         low=1))


def _aliases(source: str, raw: Any, upstreams: Mapping[str, Upstream]) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: [aliases] must be a table of model name = "
                          "\"upstream/model\"")
    out: dict[str, str] = {}
    for name, target in raw.items():
        target = _text(source, f"aliases.{name}", target)
        upstream, slash, model = target.partition("/")
        if not slash or not model or upstream not in upstreams:
            raise ConfigError(f"{source}: aliases.{name} = {target!r} must be "
                              f"\"<upstream>/<model>\" naming a configured upstream "
                              f"({', '.join(sorted(upstreams))})")
        if not upstreams[upstream].serves(model):
            raise ConfigError(f"{source}: aliases.{name} = {target!r}: {model!r} is not one of "
                              f"upstream {upstream!r}'s models")
        out[str(name)] = target
    return out


def _unknown(source: str, where: str, table: Mapping[str, Any], known: frozenset[str]) -> None:
    extra = sorted(set(table) - known)
    if extra:
        raise ConfigError(f"{source}: {where}: unknown key(s) {', '.join(extra)} "
                          f"(known: {', '.join(sorted(known))})")


def _text(source: str, what: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{source}: {what} must be a string, not {value!r}")
    return value


def _bool(source: str, what: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{source}: {what} must be true or false, not {value!r}")
    return value


def _seconds(source: str, what: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e6:
        raise ConfigError(f"{source}: {what} must be a number of seconds above 0, not {value!r}")
    return float(value)


def _int(source: str, what: str, value: Any, *, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
            high is not None and value > high):
        raise ConfigError(f"{source}: {what} must be an integer ≥ {low}, not {value!r}")
    return value


def upstream_models(config: GatewayConfig) -> Sequence[tuple[str, str]]:
    """``(model id as clients send it, owner)`` for ``GET /v1/models``."""
    return [(f"{u.name}/{m}", u.provider.id) for u in config.upstreams.values() for m in u.models]
