"""What every command shares: the home directory, the store, the console, session lookup."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from thoughtline import config

if TYPE_CHECKING:
    from rich.console import Console

    from thoughtline.store.base import Store


def home_dir(ctx: click.Context) -> Path:
    root = ctx.find_root()
    override = root.obj.get("home") if isinstance(root.obj, dict) else None
    return config.ensure_home(config.home(override))


def open_store(ctx: click.Context) -> Store:
    """The store named by ``--store``, else ``$THOUGHTLINE_DATABASE_URL``, else the home's."""
    from thoughtline.store import open_store as _open

    root = ctx.find_root()
    chosen = root.obj.get("store") if isinstance(root.obj, dict) else None
    return _open(chosen, home_dir(ctx))


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
