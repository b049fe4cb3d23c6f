"""Serving the inspector: bind, announce, serve with uvicorn until Ctrl-C or SIGTERM.

Owns the exposure rule (as ``serve``: a non-loopback address only with gateway tokens, which the
app then requires) and the startup line on stderr (``thoughtline ui on http://HOST:PORT/``).
"""

from __future__ import annotations

import sys
import webbrowser
from typing import Any

import uvicorn

from thoughtline.errors import UsageError
from thoughtline.gateway.config import is_loopback
from thoughtline.gateway.server import bind
from thoughtline.ui.app import Inspector, create_app

DEFAULT_PORT = 8788


def check_exposure(host: str, inspector: Inspector, tokens_env: str) -> None:
    if not is_loopback(host) and not inspector.tokens:
        raise UsageError(
            f"refusing to show sessions on {host}: it is not a loopback address and no gateway "
            f"tokens are configured, so anyone who can reach it could read every session. Set "
            f"{tokens_env}=token1,token2 (each token sees its own tenant's sessions), or bind "
            "127.0.0.1.")


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, url: str, open_browser: bool) -> None:
        super().__init__(config)
        self._url = url
        self._open = open_browser

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started:
            print(f"thoughtline ui on {self._url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
            if self._open:
                webbrowser.open(self._url)


def serve(inspector: Inspector, *, host: str, port: int, tokens_env: str,
          open_browser: bool = False) -> None:
    """Serve until interrupted (blocking)."""
    check_exposure(host, inspector, tokens_env)
    sock = bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    config: Any = uvicorn.Config(create_app(inspector), log_config=None, access_log=False,
                                 lifespan="off", server_header=False)
    try:
        _Server(config, f"http://{shown}:{bound_port}/", open_browser).run(sockets=[sock])
    finally:
        sock.close()
