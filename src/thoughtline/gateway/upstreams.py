"""Each upstream's own engine and connection pool, and what the gateway says when one fails.

Owns the isolation between upstreams: every ``[[upstream]]`` gets its own ``HttpTransport`` (its
own pool of ``max_connections``, its own connect/read/first-byte timeouts, and a short wait for a
free connection), so one hung upstream cannot take the connections another needs. Also owns how an
upstream's failure reads to a gateway client: the status (a client's 401/403 means *its* token;
an upstream refusing the gateway's key is a 502 naming the upstream and the key's variable), and
the text, with the upstream's key redacted. Knows no wire names and no HTTP framework.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from thoughtline.codecs import registry
from thoughtline.errors import ProviderBusy, ProviderError
from thoughtline.gateway.config import GatewayConfig, Upstream
from thoughtline.requestlog import RecordWriter
from thoughtline.tracing import Tracer
from thoughtline.transport.auth import needs_key
from thoughtline.transport.http import HttpTransport, PoolState, TransportConfig
from thoughtline.transport.redact import redact
from thoughtline.turn import TurnEngine

#: How long a request waits for one of its upstream's connections to come free (then 503).
POOL_WAIT_SECONDS = 5.0


def transport_config(upstream: Upstream) -> TransportConfig:
    """The upstream's timeouts (its preset's, then gateway.toml's) and its own pool."""
    return TransportConfig(**upstream.provider.timeouts(), max_connections=upstream.max_connections,
                           pool_timeout=POOL_WAIT_SECONDS)


class Engines:
    """One ``TurnEngine`` per upstream; a given ``transport`` (tests) is shared by all. Their
    spans go to the gateway's ``tracer`` (None: none, whatever the process's would be)."""

    def __init__(self, config: GatewayConfig, *, transport: Any = None,
                 log: RecordWriter | None = None, tracer: Tracer | None = None) -> None:
        self._engines = {
            name: TurnEngine(transport or HttpTransport(transport_config(upstream)), log,
                             tracer=tracer)
            for name, upstream in config.upstreams.items()}
        self._shared = transport

    def __getitem__(self, upstream: Upstream) -> TurnEngine:
        return self._engines[upstream.name]

    def pools(self) -> dict[str, PoolState]:
        """Each upstream's pool now (an injected transport without pools reports none)."""
        return {name: engine.transport.pool_state() for name, engine in self._engines.items()
                if hasattr(engine.transport, "pool_state")}

    async def aclose(self) -> None:
        transports = {id(e.transport): e.transport for e in self._engines.values()}
        for transport in transports.values():
            await transport.aclose()


def missing_keys(config: GatewayConfig,
                 environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``(upstream, variable)`` for each upstream whose ``api_key_env`` is unset or empty while
    its authentication needs a key (not SigV4, nor Vertex with Application Default
    Credentials)."""
    env = os.environ if environ is None else environ
    return [(u.name, u.provider.key_env) for u in config.upstreams.values()
            if u.provider.key_env and not env.get(u.provider.key_env)
            and needs_key(registry.codec(u.provider.api).auth_scheme(u.provider))]


@dataclass(frozen=True, kw_only=True, slots=True)
class Failure:
    """How an upstream's failure is answered: HTTP status, error type and code, text."""

    status: int
    kind: str
    code: str
    text: str


def provider_failure(exc: ProviderError, upstream: Upstream, key: str | None) -> Failure:
    """An upstream's HTTP error, unreachability or full pool, as the gateway answers it."""
    name = upstream.name
    status = exc.status
    detail = exc.args[0] if exc.args else ""
    if isinstance(exc, ProviderBusy):
        failure = Failure(status=503, kind="server_error", code="upstream_busy",
                          text=f"upstream {name!r} is busy: {detail}")
    elif status is None:
        failure = Failure(status=502, kind="upstream_error", code="upstream_error",
                          text=f"upstream {name!r} could not be reached: {detail}")
    elif status in (401, 403):
        failure = Failure(status=502, kind="upstream_error", code="upstream_auth",
                          text=f"upstream {name!r} refused the gateway's credentials (HTTP "
                               f"{status}): {detail}. {_key_advice(upstream)}")
    elif 400 <= status < 500:
        failure = Failure(status=status, kind="invalid_request_error", code="upstream_error",
                          text=f"upstream {name!r} answered HTTP {status}: {detail}")
    else:  # a 5xx keeps its status; anything else (a 2xx that was not JSON) is a bad gateway
        failure = Failure(status=status if status >= 500 else 502, kind="upstream_error",
                          code="upstream_error",
                          text=f"upstream {name!r} answered HTTP {status}: {detail}")
    return Failure(status=failure.status, kind=failure.kind, code=failure.code,
                   text=redact(failure.text, (key,) if key else ()))


def _key_advice(upstream: Upstream, environ: Mapping[str, str] | None = None) -> str:
    variable = upstream.provider.key_env
    if not variable:
        return ("The gateway sends it no key: set api_key_env in its [[upstream]] (this is not "
                "about your gateway token)")
    env = os.environ if environ is None else environ
    if not env.get(variable):
        return (f"{variable} is not set in the gateway's environment: set it and restart (this "
                "is not about your gateway token)")
    return (f"Check the key in the gateway's {variable} (this is not about your gateway "
            "token)")
