"""Helpers for driving the installed ``thoughtline`` command in tests.

Owns the ways a test talks to the CLI: a subprocess runner with a clean environment and its own
state home, a pseudo-terminal driver for the interactive loop, ANSI stripping, and counting the
reasoning carriers of a request body *as the emulator received it* (independently of the codecs).
Expectations stay in the tests.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SCRIPT = Path(sys.executable).with_name("thoughtline")
ENTRY = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "thoughtline.cli.main"]

CARRIER_KEYS = ("reasoning", "reasoning_content", "reasoning_details")
#: Any escape sequence a terminal would interpret (CSI, OSC) or a bare ESC.
ANSI = re.compile(r"\x1b\[[0-9;?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[=>()]")
#: Select Graphic Rendition: colours, dim, bold, italic… (``\x1b[0m`` included).
SGR = re.compile(r"\x1b\[[0-9;]*m")
DIM = re.compile(r"\x1b\[[0-9;]*\b2\b[0-9;]*m")

# Variables that would leak the developer's setup into a test run.
_SCRUB_PREFIXES = ("THOUGHTLINE_", "AWS_")
_SCRUB_SUFFIXES = ("_API_KEY", "_TOKEN")
_SCRUB_NAMES = ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
                "COLUMNS", "LINES")


def clean_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(_SCRUB_PREFIXES) and not k.endswith(_SCRUB_SUFFIXES)
           and k not in _SCRUB_NAMES}
    env["THOUGHTLINE_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text).replace("\b", "")


class Cli:
    """``thoughtline`` in a subprocess, with ``home`` as its state directory."""

    def __init__(self, home: Path, env: Mapping[str, str] | None = None) -> None:
        self.home = home
        self.env = dict(env or {})

    def environ(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        return clean_env(self.home, {**self.env, **(env or {})})

    def run(self, *args: str, input: str | None = None, env: Mapping[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*ENTRY, *args], input=input, capture_output=True, text=True,
            env=self.environ(env), timeout=timeout, check=False,
            stdin=None if input is not None else subprocess.DEVNULL)

    def ok(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        result = self.run(*args, **kwargs)
        assert result.returncode == 0, (args, result.returncode, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr, result.stderr
        return result

    def json(self, *args: str, **kwargs: Any) -> Any:
        out = self.ok(*args, **kwargs).stdout
        lines = out.strip().splitlines()
        assert len(lines) == 1, out  # exactly one JSON document
        return json.loads(lines[0])

    def invoke(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run the installed command's ``main()`` in this process, through click's test runner.

        For reading state back cheaply (``sessions … --json``, ``logs --json``); what a command
        prints and how it exits is tested with ``run`` (a real subprocess).
        """
        from click.testing import CliRunner

        from thoughtline.cli.main import main

        code: int = 0
        argv = sys.argv
        env = {"THOUGHTLINE_HOME": str(self.home), "THOUGHTLINE_DATABASE_URL": None}
        with CliRunner().isolation(env=env) as (out, err, _):
            sys.argv = ["thoughtline", *args]
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
            finally:
                sys.argv = argv
            return subprocess.CompletedProcess(list(args), code, out.getvalue().decode(),
                                               err.getvalue().decode())

    def read(self, *args: str) -> Any:
        """``invoke`` a command printing one JSON document and parse it."""
        result = self.invoke(*args)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return json.loads(result.stdout)

    def sessions(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.read("sessions", "list", "--json")
        return result

    def show(self, ref: str) -> dict[str, Any]:
        result: dict[str, Any] = self.read("sessions", "show", ref, "--json")
        return result

    def log_records(self, *args: str) -> list[dict[str, Any]]:
        result = self.invoke("logs", "--json", *args)
        assert result.returncode == 0, result.stderr
        return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def seed_sessions(home: Path, count: int, *, provider: str = "deepseek") -> list[str]:
    """``count`` sessions of one answered turn each, written straight through the store API."""
    from thoughtline import config
    from thoughtline.messages import Message, Origin, Reasoning, Text, user
    from thoughtline.store import open_store

    prov = config.presets()[provider]
    origin = Origin(api=prov.api, provider=prov.id, host="api.example", model=prov.model)
    model_config = {"provider": prov.to_json(), "tools": [], "params": {}, "verdicts": [],
                    "fingerprints": []}
    store = open_store(config.ensure_home(home) / "state.db", home)
    try:
        ids = []
        for i in range(count):
            record = store.create_session(title=f"seeded {i}", model_config=model_config)
            answer = Message(role="assistant", origin=origin, parts=(
                Reasoning(kind="text", text=f"thinking about {i}", origin=origin),
                Text(text=f"answer {i}")))
            store.append(record.id, [user(f"question {i}"), answer])
            ids.append(record.id)
        return ids
    finally:
        store.close()


@dataclass(frozen=True, slots=True)
class DemoRun:
    """One ``thoughtline --home HOME demo`` run, shared by the demo and sessions tests."""

    home: Path
    result: subprocess.CompletedProcess[str]


def carriers_of(body: Mapping[str, Any]) -> tuple[int, dict[str, int]]:
    """(assistant messages, {carrier key: how many assistant messages carry it}) of a request."""
    assistants = [m for m in body.get("messages", ()) if m.get("role") == "assistant"]
    counts = Counter(k for m in assistants for k in CARRIER_KEYS if k in m)
    return len(assistants), dict(counts)


def assistant_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body.get("messages", ()) if m.get("role") == "assistant"]


# --- pseudo-terminal --------------------------------------------------------------------------

# Make the pty the child's controlling terminal, so Ctrl-C typed into it raises SIGINT in the
# foreground process group (start_new_session=True gives the child its own session first).
_CTTY = ("import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
         "os.execv(sys.argv[1], sys.argv[1:])")


def readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` has something to read within ``timeout`` seconds. ``poll``, not
    ``select``: a long test run's worker can hold over 1,024 descriptors, and ``select`` then
    fails with "filedescriptor out of range in select()"."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(timeout * 1000))


class PtyProcess:
    """A command on a pseudo-terminal: type into it, wait for text on its screen."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], *, cols: int = 150,
                 rows: int = 40) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {**env, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"}
        command = [sys.executable, "-c", _CTTY, *argv]
        self.proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.master = master
        self.raw = b""
        self._seen = 0  # offset in the cleaned transcript already matched

    @property
    def screen(self) -> str:
        """Everything printed so far, escape sequences removed."""
        return strip_ansi(self.raw.decode("utf-8", "replace"))

    def _pump(self, timeout: float) -> int | None:
        """Read what the child printed within ``timeout``: bytes read, or None once it closed."""
        if not readable(self.master, timeout):
            return 0
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return None
        self.raw += data
        return len(data) or None

    def expect(self, text: str, timeout: float = 60) -> str:
        """Wait until ``text`` appears after the last match; returns the screen up to it."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen
            found = screen.find(text, self._seen)
            if found >= 0:
                start, self._seen = self._seen, found + len(text)
                return screen[start:self._seen]
            left = deadline - time.monotonic()
            if left <= 0 or self._pump(min(0.1, left)) is None:
                raise AssertionError(f"{text!r} did not appear; screen since last match:\n"
                                     f"{self.screen[self._seen:][-3000:]}")

    def send(self, data: str | bytes) -> None:
        os.write(self.master, data.encode() if isinstance(data, str) else data)

    def line(self, text: str) -> None:
        """Type a line and press Enter."""
        self.send(text + "\r")

    def wait(self, timeout: float = 60) -> int:
        """Wait for the child to exit, keeping its output; returns the exit status."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            if self._pump(0.05) is None:
                break
        while self._pump(0.05):
            pass  # what it printed last
        return self.proc.wait(max(0.1, deadline - time.monotonic()))

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        os.close(self.master)
