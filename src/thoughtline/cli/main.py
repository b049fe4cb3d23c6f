"""Entry point: the top-level group, global options and lazy loading of subcommands.

Subcommand modules (and their heavy imports: httpx, rich, prompt_toolkit, starlette) load only when
that subcommand runs, so ``thoughtline --help`` stays fast.
"""

from __future__ import annotations

import importlib
import sys

import click

# command name -> (module, attribute, one-line help shown by --help without importing the module)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "chat": ("thoughtline.cli.chat", "chat", "Chat with a reasoning model (interactive or -p)."),
    "sessions": ("thoughtline.cli.sessions", "sessions",
                 "List, show, export, compact, restore or remove sessions."),
    "logs": ("thoughtline.cli.logs", "logs", "Show which reasoning fields each request carried."),
    "routes": ("thoughtline.cli.routes", "routes",
               "Explain what a route receives (and what was learned about it)."),
    "demo": ("thoughtline.cli.demo", "demo", "Offline walkthrough on the built-in emulators."),
    "serve": ("thoughtline.cli.serve", "serve", "Run the OpenAI-compatible reasoning gateway."),
    "ui": ("thoughtline.cli.ui", "ui", "Browse sessions, reasoning and requests in a browser."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(entry[0])
        command: click.Command = getattr(module, entry[1])
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, _COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", "home_dir", type=click.Path(file_okay=False), envvar=None,
              help="State directory for this command (default: $THOUGHTLINE_HOME or "
                   "~/.thoughtline).")
@click.option("--store", "store", metavar="URL|PATH", default=None,
              help="Session store: a postgresql:// URL or a SQLite file (default: "
                   "$THOUGHTLINE_DATABASE_URL, else state.db in the home).")
@click.version_option(package_name="thoughtline")
@click.pass_context
def cli(ctx: click.Context, home_dir: str | None, store: str | None) -> None:
    """thoughtline keeps a reasoning model's line of thought across turns, tool loops, resumes,
    branches and compaction, shaped for every provider route.

    \b
    Quick start (offline):   thoughtline demo
    Chat:                    thoughtline chat --provider deepseek
    What a route receives:   thoughtline routes --provider openrouter
    """
    ctx.ensure_object(dict)
    ctx.obj["home"] = home_dir
    ctx.obj["store"] = store


def main() -> None:
    from thoughtline.errors import ThoughtlineError, UsageError
    from thoughtline.termsafe import safe

    undecodable = _undecodable_argument(sys.argv[1:])
    if undecodable is not None:
        click.echo(f"error: argument {undecodable} is not valid UTF-8 text (check the terminal's "
                   "or the shell's encoding)", err=True)
        sys.exit(2)
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except UsageError as exc:
        click.echo(f"error: {safe(exc)}", err=True)
        sys.exit(2)
    except ThoughtlineError as exc:
        click.echo(f"error: {safe(exc)}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


def _undecodable_argument(args: list[str]) -> int | None:
    """The 1-based position of the first argument that was not UTF-8 (Python hands such bytes
    over as lone surrogates), or None."""
    for position, arg in enumerate(args, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return position
    return None


if __name__ == "__main__":
    main()
