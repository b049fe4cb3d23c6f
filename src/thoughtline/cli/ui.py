"""``thoughtline ui``: the session inspector in a browser (docs/cli.md, "UI")."""

from __future__ import annotations

import click

from thoughtline.cli.common import home_dir, open_store


@click.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (not loopback: only with gateway tokens set).")
@click.option("--port", type=click.IntRange(0, 65535), default=8788, show_default=True,
              help="Port to listen on (0 picks a free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser.")
@click.pass_context
def ui(ctx: click.Context, host: str, port: int, open_browser: bool) -> None:
    """Browse sessions, branches, reasoning and what each request carried.

    \b
    Read-only. With the gateway's tokens configured ($THOUGHTLINE_GATEWAY_TOKENS, or the
    tokens_env of gateway.toml) the page asks for a token (as the password) and shows that
    tenant's sessions; otherwise it answers on 127.0.0.1 only and shows every session.
    """
    from thoughtline.compaction import load_settings
    from thoughtline.gateway import config as gateway_config
    from thoughtline.ui.app import Inspector
    from thoughtline.ui.server import serve

    home = home_dir(ctx)
    path = gateway_config.default_path(home)
    tokens_env = gateway_config.load(path).tokens_env if path.exists() \
        else gateway_config.DEFAULT_TOKENS_ENV
    tokens = gateway_config.GatewayConfig(tokens_env=tokens_env).tokens()
    windows = load_settings(home).windows
    store = open_store(ctx)
    try:
        serve(Inspector(store=store, logs=home / "logs", tokens=tokens, windows=windows),
              host=host, port=port, tokens_env=tokens_env, open_browser=open_browser)
    finally:
        store.close()
