"""Scenario 5 — CLI start: whole ``thoughtline`` processes, as a user's shell runs them.

``thoughtline --help`` and ``thoughtline --home H sessions list`` against a home holding 100
sessions written through the store API. Output is captured (not a terminal), so the plain-text
paths run. Each command: one warm-up run, then the median wall time of several (the median CPU
time, from the child's rusage, is noted beside it: it shows what is ours when the machine is
shared). The floor is the same interpreter doing nothing (``python -c pass``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from benchmarks import synth
from benchmarks.measure import Row, at_most, processes, ratio
from benchmarks.request_build import ROUTES
from thoughtline.store import open_store

SCENARIO = "CLI start"
SESSIONS = 100
RUNS = 9
QUICK_RUNS = 3
HELP_TARGET_S = 0.250
LIST_TARGET_S = 0.400


def entry_point() -> Path:
    return Path(sys.executable).with_name("thoughtline")


def fill_home(home: Path, count: int) -> None:
    """``count`` sessions, each with one synthetic turn, written through the store API."""
    store = open_store(None, home)
    try:
        turn = synth.history(1)
        for i in range(count):
            provider = ROUTES[i % len(ROUTES)].provider.to_json()
            record = store.create_session(title=f"bench session {i}",
                                          model_config=synth.model_config(provider))
            store.append(record.id, turn)
    finally:
        store.close()


def run(*, quick: bool) -> list[Row]:
    runs = QUICK_RUNS if quick else RUNS
    exe = str(entry_point())
    bare, bare_cpu = processes([sys.executable, "-c", "pass"], runs)
    help_s, help_cpu = processes([exe, "--help"], runs)
    with tempfile.TemporaryDirectory(prefix="tl-bench-cli-") as tmp:
        home = Path(tmp, "home")
        fill_home(home, SESSIONS)
        list_s, list_cpu = processes([exe, "--home", str(home), "sessions", "list"], runs)
    cpu = {"floor_cpu_s": bare_cpu}
    return [
        Row(scenario=SCENARIO, case="thoughtline --help", size="—", ours=help_s, floor=bare,
            floor_kind="python -c pass", ratio=ratio(help_s, bare),
            target=f"≤ {HELP_TARGET_S * 1e3:g} ms", ok=at_most(help_s, HELP_TARGET_S), reps=runs,
            note=_cpu_note(help_cpu, bare_cpu), extra={"cpu_s": help_cpu, **cpu}),
        Row(scenario=SCENARIO, case="thoughtline sessions list", size=f"{SESSIONS} sessions",
            ours=list_s, floor=bare, floor_kind="python -c pass", ratio=ratio(list_s, bare),
            target=f"≤ {LIST_TARGET_S * 1e3:g} ms", ok=at_most(list_s, LIST_TARGET_S), reps=runs,
            note=_cpu_note(list_cpu, bare_cpu) + "; output captured: the plain-text path",
            extra={"cpu_s": list_cpu, **cpu}),
    ]


def _cpu_note(cpu: float, floor_cpu: float) -> str:
    return f"CPU time {cpu * 1e3:.0f} ms (floor {floor_cpu * 1e3:.0f} ms)"
