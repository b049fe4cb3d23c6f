"""``thoughtline serve``: the OpenAI-compatible gateway (design.md §3.3)."""

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
    """Serve POST /v1/chat/completions in front of your upstreams, keeping reasoning.

    \b
    Any OpenAI client works unchanged:
      OPENAI_BASE_URL=http://127.0.0.1:8787/v1 OPENAI_API_KEY=<token> your-agent
    and asks for model "<upstream name>/<model id>", e.g. "ds/deepseek-reasoner".
    """
    from thoughtline.gateway import config as gateway_config
    from thoughtline.gateway.server import serve as run

    home = home_dir(ctx)
    path = Path(config_path) if config_path else gateway_config.default_path(home)
    loaded = gateway_config.load(path).with_flags(host=host, port=port)
    root = ctx.find_root().obj
    store = root.get("store") if isinstance(root, dict) else None
    if store:  # the global --store beats [server] store (which beats $THOUGHTLINE_DATABASE_URL)
        loaded = replace(loaded, store=store)
    if check_only:
        from thoughtline.gateway.preflight import check

        raise SystemExit(check(loaded, home))
    run(loaded, home, workers=workers)
