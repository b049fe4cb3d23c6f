"""``thoughtline serve --check``: is this gateway ready to be deployed, without serving.

Owns the checks a deploy pipeline runs before it starts (or replaces) gateways: the config loaded
(the caller has loaded it; a broken file never gets here), every upstream's key variable set and
its URL well formed (one line per upstream), the bind allowed (tokens when not on loopback), and
the store opened and answering a read. Prints one line per check on stdout and returns the exit
status: 0 when every check passed, 2 otherwise. Never prints a key, a token or a store password.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from thoughtline.config import check_base_url
from thoughtline.errors import StoreError, UsageError
from thoughtline.gateway.config import GatewayConfig, check_exposure
from thoughtline.gateway.storage import open_gateway_store
from thoughtline.gateway.upstreams import missing_keys
from thoughtline.termsafe import safe_line

OK, FAILED = 0, 2


def check(config: GatewayConfig, home: Path, environ: Mapping[str, str] | None = None) -> int:
    """Run every check, print one line each, and return 0 (all passed) or 2."""
    unset = dict(missing_keys(config, environ))
    results = [_upstream(config, name, unset.get(name, "")) for name in config.upstreams]
    results.append(_exposure(config, environ))
    results.append(_store(config, home))
    for _passed, line in results:
        print(safe_line(line), file=sys.stdout, flush=True)
    return OK if all(passed for passed, _line in results) else FAILED


def _upstream(config: GatewayConfig, name: str, unset: str) -> tuple[bool, str]:
    provider = config.upstreams[name].provider
    problems = []
    if unset:
        problems.append(f"{unset} is not set (its requests would go without a key)")
    if provider.base_url:
        try:
            check_base_url(provider.base_url)
        except UsageError as exc:
            problems.append(str(exc))
    where = provider.base_url or "the provider's default endpoint"
    if problems:
        return False, f"FAIL upstream {name!r} ({where}): {'; '.join(problems)}"
    key = f", key in {provider.key_env}" if provider.key_env and not unset else ""
    return True, f"ok   upstream {name!r} ({where}{key})"


def _exposure(config: GatewayConfig, environ: Mapping[str, str] | None) -> tuple[bool, str]:
    try:
        check_exposure(config, environ)
    except UsageError as exc:
        return False, f"FAIL server {config.host}:{config.port}: {exc}"
    return True, f"ok   server {config.host}:{config.port}"


def _store(config: GatewayConfig, home: Path) -> tuple[bool, str]:
    try:
        # As the gateway will open it, but a refused connection is said at once: a deploy
        # pipeline's check wants "not now", not the gateway's wait to ride out a restart.
        store = open_gateway_store(config.store, home, fail_fast=True)
    except StoreError as exc:
        return False, f"FAIL store: {exc}"
    try:
        store.latest_session(tenant="thoughtline-check")
    except StoreError as exc:
        return False, f"FAIL store {getattr(store, 'location', '')}: {exc}"
    finally:
        store.close()
    return True, f"ok   store {getattr(store, 'location', '')}"
