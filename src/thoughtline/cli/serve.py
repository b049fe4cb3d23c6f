"""``thoughtline serve``: the OpenAI-compatible gateway (docs/gateway.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from thoughtline.cli.common import home_dir


@click.command("serve")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="gateway.toml to use (default: $THOUGHTLINE_HOME/gateway.toml).")
@click.option("--host", help="Address to listen on (overrides [server] host).")
@click.option("--port", type=click.IntRange(0, 65535),
              help="Port to listen on (overrides [server] port; 0 picks a free one).")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Worker processes serving the one port (they share the store: SQLite in "
                   "WAL, or PostgreSQL).")
@click.option("--check", "check_only", is_flag=True,
              help="Check the config, each upstream's key variable and URL, and the store; one "
                   "line per upstream; exit 0 when all is well, else 2 (for deploy pipelines).")
@click.pass_context
def serve(ctx: click.Context, config_path: str | None, host: str | None,
          port: int | None, workers: int, check_only: bool) -> None:
    """Serve your upstreams to any Chat, Messages or Responses client, keeping reasoning.

    \b
    Clients work unchanged; they ask for model "<upstream name>/<model id>" (or a name in
    [aliases]):
      OPENAI_BASE_URL=http://127.0.0.1:8787/v1 OPENAI_API_KEY=<token> your-agent
      ANTHROPIC_BASE_URL=http://127.0.0.1:8787 ANTHROPIC_API_KEY=<token> claude

    \b
    gateway.toml ($THOUGHTLINE_HOME/gateway.toml, or --config FILE):
      [server]
      host = "127.0.0.1"           # a non-loopback address needs tokens
      metrics_public = false       # GET /metrics without a token
      port = 8787
      tokens_env = "THOUGHTLINE_GATEWAY_TOKENS"  # comma-separated; each token is a tenant
      max_body_bytes = 33554432    # larger bodies get 413
      max_items = 50000            # requests with more messages get 400
      access_log = ""              # a file; default: JSON lines on stderr
      store = ""                   # a path or postgresql:// URL; default: the home's state.db

    \b
      [[upstream]]                 # one table per upstream
      name = "ds"                  # model "ds/deepseek-v4-pro" goes here
      provider = "deepseek"        # a preset, as for chat --provider
      base_url = "https://api.deepseek.com"   # optional: the preset's URL
      api_key_env = "DEEPSEEK_API_KEY"        # the variable holding the key (never the key)
      models = ["deepseek-v4-pro"] # listed by /v1/models; others get 404 unless
      allow_any_model = false      #   this is true
      connect_timeout = 10         # seconds; also read_timeout, first_byte_timeout
      max_connections = 100        # this upstream's own pool

    \b
      [aliases]                    # optional: client model names -> upstream/model
      "*" = "ds/deepseek-v4-pro"

    The docs say more: docs/gateway.md (and docs/operations.md for running it).
    """
    from thoughtline.gateway import config as gateway_config

    home = home_dir(ctx)
    path = Path(config_path) if config_path else gateway_config.default_path(home)
    loaded = gateway_config.load(path).with_flags(host=host, port=port)
    root = ctx.find_root().obj
    store = root.get("store") if isinstance(root, dict) else None
    if store:  # the global --store beats [server] store (which beats $THOUGHTLINE_DATABASE_URL)
        loaded = replace(loaded, store=store)
    if check_only:  # the server (starlette, uvicorn, the faces) is not even imported
        from thoughtline.gateway.accesslog import AccessLog, log_as_json
        from thoughtline.gateway.preflight import check

        log_as_json(AccessLog())  # e.g. the store pool's reconnects: JSON lines on stderr
        raise SystemExit(check(loaded, home))
    from thoughtline.gateway.server import serve as run

    run(loaded, home, workers=workers)
