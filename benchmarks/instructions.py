"""Instructions, not milliseconds: the resume and cold-build steps counted under valgrind.

``python -m benchmarks.instructions [API ...]`` (needs ``valgrind``; about a minute per API).
Wall-clock rows on a shared 2-core machine move by 20-50% between runs of the same code; an
instruction count moves by well under 1%, so two commits compare here even when the machine is
busy. Per API (Chat deepseek, Responses, Gemini, Bedrock Claude, Anthropic, Interactions; the
1,000-turn sessions of ``benchmarks.resume``) it prints, in millions of instructions:

- **resume**: ``Session.resume`` of the stored session (after a warm-up resume of a small one in
  the same process, so lazy imports and module caches are not counted);
- **first build**: its first request's bytes after that resume;
- **cold build**: the same history's request from messages in memory with a new cache;
- **steady build**: the request of a session whose cache has walked all but the last three
  turns, those three arriving as new (equal) messages: the request-build rows' steady case.

Each is a difference of two child processes' totals (``_instructions_child.py``); the children
write bytecode first, so compiling is not counted either.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from thoughtline.messages import Message
from thoughtline.wire.cache import WireCache

CHILD = Path(__file__).with_name("_instructions_child.py")
APIS = ("chat", "responses", "gemini", "bedrock", "anthropic", "interactions")
TURNS = 1_000


def builder(api: str, *, steady: bool = False) -> Callable[[], bytes]:
    """A cold build of the API's benchmark history: its request from messages in memory, with
    a new cache each time (what the request-build rows call cold); with ``steady``, one cache
    that has built all but the last three turns, which come as new messages each time."""
    build = _build_of(api)
    history, cache = build.history, None
    if not steady:
        return lambda: build(history, WireCache())
    from benchmarks.request_build import _fresh

    cache, head, tail = WireCache(), history[:-3], history[-3:]
    build(head, cache)
    return lambda: build([*head, *_fresh(tail)], cache)


class _Build:
    """An API's request bytes for (history, cache), with the API's benchmark history."""

    def __init__(self, history: Sequence[Message],
                 make: Callable[[Sequence[Message], WireCache], bytes]) -> None:
        self.history, self._make = list(history), make

    def __call__(self, history: Sequence[Message], cache: WireCache) -> bytes:
        return self._make(history, cache)


def _build_of(api: str) -> _Build:
    from benchmarks import (
        anthropic_rows,
        bedrock_rows,
        gemini_rows,
        interactions_rows,
        responses_rows,
        synth,
    )
    from benchmarks.request_build import ROUTES, request_bytes
    from thoughtline import config

    if api == "chat":
        return _Build(synth.history(TURNS), lambda h, c: request_bytes(h, ROUTES[0], c))
    if api == "responses":
        return _Build(responses_rows.history(TURNS), responses_rows._build)
    if api == "gemini":
        return _Build(gemini_rows.history(TURNS), gemini_rows.request_bytes)
    if api == "bedrock":
        model = config.presets()["bedrock"].model
        return _Build(bedrock_rows.history(model, TURNS),
                      lambda h, c: bedrock_rows._bytes(h, model, c))
    if api == "interactions":
        return _Build(interactions_rows.history(TURNS), interactions_rows.request_bytes)
    return _Build(anthropic_rows.history(TURNS, 50), anthropic_rows.request_bytes)


def _sessions(home: Path, api: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """(db, session id) of the API's benchmark session and of a small warm-up one."""
    from benchmarks import resume

    out = []
    for turns in (TURNS, 10):
        where = home / api / str(turns)
        if api == "chat":
            sid = resume.write_session(where, turns)
        else:
            found = {label.split()[0]: (p, h) for label, p, h in resume._other_apis(turns)}
            sid = resume.write_other(where, *found[api])
        out.append((str(where / "state.db"), sid))
    return out[0], out[1]


def _count(args: list[str]) -> int:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    root = str(Path(__file__).resolve().parent.parent)  # the child, run by path, imports benchmarks
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    subprocess.run([sys.executable, str(CHILD), *args], check=True, env=env)  # bytecode first
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                           "--cachegrind-out-file=/dev/null", sys.executable, str(CHILD), *args],
                          capture_output=True, text=True, env=env, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"valgrind printed no instruction count:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def measure(home: Path, api: str) -> dict[str, Any]:
    (db, sid), (warm_db, warm_sid) = _sessions(home, api)
    steps = {mode: _count(["resume", db, sid, warm_db, warm_sid, mode])
             for mode in ("open", "resume", "build")}
    one, three = _count(["cold", api, "1"]), _count(["cold", api, "3"])
    calm, busy = _count(["steady", api, "1"]), _count(["steady", api, "5"])
    return {"resume": (steps["resume"] - steps["open"]) / 1e6,
            "first build": (steps["build"] - steps["resume"]) / 1e6,
            "cold build": (three - one) / 2 / 1e6, "steady build": (busy - calm) / 4 / 1e6}


def main(argv: list[str]) -> None:
    apis = argv or list(APIS)
    unknown = sorted(set(apis) - set(APIS))
    if unknown:
        raise SystemExit(f"unknown API {', '.join(unknown)}: choose from {', '.join(APIS)}")
    print(f"| API (N={TURNS:,}) | resume | first build | resume + first | cold build "
          "| steady build |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="tl-instructions-") as tmp:
        for api in apis:
            m = measure(Path(tmp), api)
            print(f"| {api} | {m['resume']:.1f}M | {m['first build']:.1f}M | "
                  f"{m['resume'] + m['first build']:.1f}M | {m['cold build']:.1f}M | "
                  f"{m['steady build']:.2f}M |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
