"""The interactive chat loop: prompt_toolkit input, slash commands, Ctrl-C / Ctrl-D."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from thoughtline.termsafe import safe, safe_line

if TYPE_CHECKING:
    from thoughtline.cli.turns import ChatRunner

HELP = """\
Enter sends; Esc then Enter (or Alt-Enter) inserts a newline. Ctrl-C stops an answer, Ctrl-D exits.
  /branch [title]        continue in a new branch (every turn's reasoning carried over)
  /model ID              switch the model for the next turns
  /sessions              list recent sessions
  /reasoning show|hide   show or hide the model's reasoning
  /compact [N]           compact now: summarize older turns, keep the last N verbatim
  /exit                  leave (the session is saved after every turn)"""


def private_file(path: Path) -> Path:
    """Create ``path`` owner-only (0600), or make an existing one so: what was typed at the
    prompt is as private as ``state.db`` and the logs."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


def _prompt_reader(runner: ChatRunner) -> Callable[[], str]:
    """A line reader: prompt_toolkit on a terminal, plain stdin otherwise."""
    if not sys.stdin.isatty():
        def read_plain() -> str:
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line.rstrip("\n")

        return read_plain
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    history = FileHistory(str(private_file(runner.home / "prompt-history")))
    prompt: PromptSession[str] = PromptSession(history=history, key_bindings=bindings,
                                               multiline=False)

    def read() -> str:
        return prompt.prompt("› ")

    return read


def _slash(runner: ChatRunner, line: str) -> bool:
    """Handle a slash command; False means exit."""
    name, _, arg = line[1:].partition(" ")
    arg = arg.strip()
    out = runner.out
    if name in ("exit", "quit", "q"):
        return False
    if name == "help":
        out.print(HELP, markup=False)
    elif name == "branch" and not runner.session.turns:
        out.print("nothing to branch yet: this session has no turns (send a message first)",
                  markup=False)
    elif name == "branch":
        branched = runner.branch(arg)
        out.print(f"branched: now in session {branched.id[:12]} "
                  f"({safe_line(branched.record.title)}) with "
                  f"{branched.turns} turn{'' if branched.turns == 1 else 's'} carried over",
                  markup=False)
    elif name == "model":
        if not arg:
            out.print(f"model: {runner.session.provider.model}", markup=False)
        else:
            runner.switch_model(arg)
            route = runner.session.route
            carriers = route.to_json()["carriers"]
            out.print(f"model: {arg} (route {route.row}, carriers "
                      f"{', '.join(carriers) or 'none'})", markup=False)
    elif name == "sessions":
        for record in runner.store.list_sessions(limit=10):
            mark = "*" if record.id == runner.session.id else " "
            out.print(f"{mark} {record.id[:12]}  {record.turns:>4} turns  "
                      f"{safe_line(record.title)}", markup=False)
    elif name == "reasoning":
        if arg not in ("show", "hide"):
            out.print("usage: /reasoning show|hide", markup=False)
        else:
            runner.show_reasoning = arg == "show"
            out.print(f"reasoning {'shown' if runner.show_reasoning else 'hidden'}",
                      markup=False)
    elif name == "compact":
        _compact(runner, arg)
    else:
        out.print(f"unknown command /{name} — /help lists them", markup=False)
    return True


def _compact(runner: ChatRunner, arg: str) -> None:
    """``/compact [N]``: compress now, with a progress line while the summary streams; Ctrl-C
    stops it and leaves the session as it was."""
    import asyncio
    import contextlib
    import signal

    from thoughtline import compaction
    from thoughtline.cli.common import end_progress, progress_line
    from thoughtline.errors import ThoughtlineError

    out = runner.out
    if arg and not arg.isdigit():
        out.print("usage: /compact [N]   (N: turns kept verbatim)", markup=False)
        return
    settings = compaction.load_settings(runner.home)

    progress = progress_line()
    task = runner.loop.create_task(compaction.compress(
        runner.session, keep=int(arg) if arg else None, settings=settings, on_progress=progress))
    with contextlib.suppress(NotImplementedError, RuntimeError):
        runner.loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        result = runner.loop.run_until_complete(task)
    except asyncio.CancelledError:
        end_progress()
        runner.err.print("[compaction interrupted — the session is unchanged]", style="yellow",
                         markup=False)
        return
    except ThoughtlineError as exc:
        end_progress()
        runner.err.print(f"compaction failed: {exc} (the session is unchanged)", style="red",
                         markup=False)
        return
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            runner.loop.remove_signal_handler(signal.SIGINT)
    end_progress()
    out.print(result.describe(), markup=False)


def run_interactive(runner: ChatRunner) -> None:
    from thoughtline.errors import ProtocolError, ProviderError

    session = runner.session
    runner.out.print(f"thoughtline — session {session.id[:12]} · {session.provider.id} · "
                     f"{safe_line(session.provider.model)} · route {session.route.row}   (/help)",
                     style="bold", markup=False)
    read = _prompt_reader(runner)
    while True:
        try:
            line = read()
        except KeyboardInterrupt:
            continue
        except EOFError:
            runner.out.print()
            return
        line = line.strip()
        if not line:
            continue
        if line.startswith("/"):
            if not _slash(runner, line):
                return
            continue
        try:
            runner.turn(line)
            if runner.stopped_by == signal.SIGTERM:
                return  # asked to stop: the session is kept, the loop ends
        except (ProviderError, ProtocolError) as exc:
            runner.err.print(f"error: {safe(exc)}", style="red", markup=False)
            runner.err.print("(the session is intact; try again or /model to switch)",
                             style="dim", markup=False)
