"""What every command shares: the home directory, the store, the console, session lookup."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from thoughtline import config

if TYPE_CHECKING:
    from rich.console import Console

    from thoughtline.store.base import Store


def home_path(ctx: click.Context) -> Path:
    """The home this command uses, not created (for commands that only read from it)."""
    root = ctx.find_root()
    override = root.obj.get("home") if isinstance(root.obj, dict) else None
    return config.home(override)


def home_dir(ctx: click.Context) -> Path:
    """The home, created owner-only if needed (``HomeError`` when it cannot be)."""
    return config.ensure_home(home_path(ctx))


def open_store(ctx: click.Context) -> Store:
    """The store named by ``--store``, else ``$THOUGHTLINE_DATABASE_URL``, else the home's."""
    from thoughtline.store import DATABASE_URL_ENV, STATE_DB
    from thoughtline.store import open_store as _open

    root = ctx.find_root()
    chosen = root.obj.get("store") if isinstance(root.obj, dict) else None
    home = home_dir(ctx)
    state = home / STATE_DB
    if chosen is None and not os.environ.get(DATABASE_URL_ENV, "").strip() \
            and _is_empty_file(state):
        # SQLite takes a 0-byte file for a new database: say so instead of silently starting
        # over (a truncated copy or a failed restore looks exactly like this).
        click.echo(f"warning: {state} is an empty (0-byte) file; starting a new, empty store "
                   "in it. If it held your sessions, restore it from a backup before going "
                   "on.", err=True)
    return _open(chosen, home)


def _is_empty_file(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def plain_output(stream: object = None) -> bool:
    """True when output must be plain text: NO_COLOR set, or not a terminal."""
    target = stream or sys.stdout
    isatty = getattr(target, "isatty", None)
    return bool(os.environ.get("NO_COLOR")) or not (isatty and isatty())


def console(*, stderr: bool = False, plain_width: int | None = None) -> Console:
    """A rich console; plain (no colour, no escapes) when ``plain_output``. ``plain_width`` sets
    the width used off a terminal (rich assumes 80, which folds wide tables)."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    plain = plain_output(stream)
    width = plain_width if plain and plain_width and not os.environ.get("COLUMNS") else None
    return Console(file=stream, no_color=plain, color_system=None if plain else "auto",
                   highlight=False, soft_wrap=True, emoji=False, width=width,
                   force_terminal=False if plain else None)


def progress_line() -> Any:
    """A callback showing how much of the summary has streamed, on one stderr line (rewritten
    in place on a terminal; said once otherwise). ``end_progress`` clears it."""
    live = not plain_output(sys.stderr)
    shown = [0]

    def progress(chars: int) -> None:
        if live:
            click.echo(f"\rcompacting: summary {chars} characters…", err=True, nl=False)
            shown[0] = chars
        elif not shown[0]:
            shown[0] = 1
            click.echo("compacting: summarizing…", err=True)

    return progress


def end_progress() -> None:
    """Clear a progress line so the next message starts at the left margin (terminals only)."""
    if not plain_output(sys.stderr):
        click.echo("\r\033[K", err=True, nl=False)


def require_key_for(prov: config.ProviderConfig) -> None:
    """Fail before any session exists or the prompt opens when ``prov``'s key variable is unset:
    the message names the variable, as the gateway's does for its upstreams."""
    from thoughtline.codecs.registry import codec, route_for
    from thoughtline.turn import require_key

    api = codec(prov.api)
    require_key(prov, api, route_for(api, prov).host)
