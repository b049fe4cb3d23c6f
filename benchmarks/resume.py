"""Scenario 2 — resume: a fresh process opens ``state.db``, loads an N-turn session and builds its
first request.

The parent writes one session of N synthetic turns through the store API, then runs
``_resume_child.py`` several times. Two numbers per size: the time inside the child from just
before ``open_store`` to the request bytes (what the target is about; the floor beside it is bare
``sqlite3`` reading the same stored rows plus ``orjson.dumps`` of the same body), and the child's
whole-process wall time (the floor beside it: ``python -c pass``, the interpreter start alone).
Sessions are written as a session writes the turns it answers, so each turn also has its stored
wire form (issue 17); the read floor reads those rows as well — every row the resume reads.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import synth
from benchmarks.measure import Row, at_most, process, processes, ratio
from benchmarks.request_build import ROUTES
from thoughtline.session import Session
from thoughtline.store import open_store

SCENARIO = "resume"
CHILD = Path(__file__).with_name("_resume_child.py")
SIZES = (100, 1_000)
QUICK_SIZES = (100,)
TARGET_N = 1_000
TARGET_S = 0.060
RUNS = 7
QUICK_RUNS = 3


def write_session(home: Path, n: int) -> str:
    """A ``state.db`` under ``home`` holding one deepseek session of ``n`` synthetic turns, stored
    the way a session stores the turns it answers (with their wire forms)."""
    store = open_store(None, home)
    try:
        session = Session.create(store, ROUTES[0].provider, title=f"bench {n}",
                                 tools=(synth.TOOL,))
        session.append(synth.history(n))
        return session.id
    finally:
        store.close()


def run_child(db: Path, session_id: str) -> tuple[dict[str, Any], float]:
    """The child's own numbers, with its whole-process wall and CPU seconds added."""
    done = process([sys.executable, str(CHILD), str(db), session_id])
    numbers = json.loads(done.stdout)
    numbers["process_cpu_s"] = done.cpu
    return numbers, done.wall


def run(*, quick: bool) -> list[Row]:
    sizes, runs = (QUICK_SIZES, QUICK_RUNS) if quick else (SIZES, RUNS)
    bare, _ = processes([sys.executable, "-c", "pass"], runs)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="tl-bench-resume-") as tmp:
        for n in sizes:
            home = Path(tmp, str(n))
            session_id = write_session(home, n)
            run_child(home / "state.db", session_id)  # warm the page cache and bytecode
            samples = [run_child(home / "state.db", session_id) for _ in range(runs)]
            rows.extend(_rows(n, samples, bare, runs))
    return rows


def _rows(n: int, samples: list[tuple[dict[str, Any], float]], bare: float,
          runs: int) -> list[Row]:
    def med(key: str) -> float:
        return statistics.median(s[key] for s, _ in samples)

    inproc, floor = med("inproc_s"), med("floor_s")
    wall = statistics.median(w for _, w in samples)
    targeted = n == TARGET_N
    breakdown = {k: med(k) for k in ("import_s", "open_s", "load_s", "build_s", "dumps_s",
                                      "cpu_s")}
    first = samples[0][0]
    extra = {"turns": n, "bytes": first["bytes"], "same_bytes": first["same_bytes"],
             **breakdown}
    size = f"N={n:,}"
    return [
        Row(scenario=SCENARIO, case="open → load → first request bytes (in process)",
            size=size, ours=inproc, floor=floor, floor_kind="sqlite3 read rows + orjson.dumps",
            ratio=ratio(inproc, floor), target=f"≤ {TARGET_S * 1e3:g} ms" if targeted else "",
            ok=at_most(inproc, TARGET_S) if targeted else None, reps=runs, extra=extra,
            note=_breakdown(breakdown)),
        Row(scenario=SCENARIO, case="whole process (python child.py)", size=size, ours=wall,
            floor=bare, floor_kind="python -c pass", ratio=ratio(wall, bare), reps=runs,
            note=f"imports {breakdown['import_s'] * 1e3:.0f} ms; CPU time "
                 f"{med('process_cpu_s') * 1e3:.0f} ms", extra={"turns": n}),
    ]


def _breakdown(seconds: dict[str, float]) -> str:
    ms = {k: v * 1e3 for k, v in seconds.items()}
    return ("open {open_s:.1f} + load {load_s:.1f} + build {build_s:.1f} + dumps {dumps_s:.1f} ms;"
            " CPU time {cpu_s:.1f} ms").format(**ms)
