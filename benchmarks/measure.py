"""Timing primitives and the result row every scenario reports.

Owns how a number is taken: ``time.perf_counter`` around one call, the cyclic garbage collector
paused for the whole measurement (as ``timeit`` does; the calls measured make no reference cycles,
so their garbage is still freed at once), a warm-up call first, then an adaptive number of
repetitions (enough to fill a small time budget, within bounds) and the median. ``paired``
interleaves ours and the floor call by call, so drift on a shared machine hits both alike.
"""

from __future__ import annotations

import gc
import os
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: A measured call: ``prepare()`` (untimed) makes the argument ``run(arg)`` (timed) consumes.
Prepare = Callable[[], Any]
Run = Callable[[Any], Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class Budget:
    """How long to spend on one measurement, and the bounds on repetitions."""

    seconds: float = 0.6
    min_reps: int = 5
    max_reps: int = 200
    warmup: int = 1


QUICK = Budget(seconds=0.05, min_reps=3, max_reps=20, warmup=1)
FULL = Budget()


def once(run: Run, arg: Any = None) -> float:
    """Seconds taken by one ``run(arg)``."""
    start = time.perf_counter()
    run(arg)
    return time.perf_counter() - start


def _noop() -> None:
    return None


def paired(ours: Run, floor: Run | None, budget: Budget, *, prepare: Prepare = _noop,
           floor_prepare: Prepare = _noop) -> tuple[float, float | None, int]:
    """Median seconds of ``ours`` and ``floor`` (interleaved), and the repetitions taken."""
    gc.collect()
    gc.disable()
    try:
        return _paired(ours, floor, budget, prepare, floor_prepare)
    finally:
        gc.enable()


def _paired(ours: Run, floor: Run | None, budget: Budget, prepare: Prepare,
            floor_prepare: Prepare) -> tuple[float, float | None, int]:
    for _ in range(budget.warmup):
        ours(prepare())
        if floor is not None:
            floor(floor_prepare())
    first = once(ours, prepare()) + (once(floor, floor_prepare()) if floor is not None else 0.0)
    reps = int(min(budget.max_reps, max(budget.min_reps, budget.seconds / max(first, 1e-9))))
    ours_times: list[float] = []
    floor_times: list[float] = []
    for _ in range(reps):
        ours_times.append(once(ours, prepare()))
        if floor is not None:
            floor_times.append(once(floor, floor_prepare()))
    return (statistics.median(ours_times),
            statistics.median(floor_times) if floor is not None else None, reps)


@dataclass(frozen=True, kw_only=True, slots=True)
class Process:
    """One finished child process: its output, wall seconds and CPU seconds (user + system)."""

    stdout: str
    wall: float
    cpu: float


def child_env() -> dict[str, str]:
    """The environment of measured child processes: bytecode is written and read (from a cache
    of the benchmark's own, not the source tree), as for an installed package — pip compiles it
    at install time. A PYTHONDONTWRITEBYTECODE left in the environment would otherwise make
    every child compile every module it imports, and time that."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir(), "thoughtline-bench-pycache"))
    return env


def process(argv: Sequence[str], *, cwd: str | None = None) -> Process:
    """Run ``argv`` to completion (it must succeed); CPU time comes from the child's rusage, so
    it stays meaningful when other work shares the machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, check=False,
                          env=child_env())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Process(stdout=done.stdout, wall=wall, cpu=cpu)


def processes(argv: Sequence[str], runs: int, *, warmup: int = 1) -> tuple[float, float]:
    """Median wall and median CPU seconds of ``runs`` runs of ``argv`` after ``warmup`` runs."""
    for _ in range(warmup):
        process(argv)
    done = [process(argv) for _ in range(runs)]
    return statistics.median(p.wall for p in done), statistics.median(p.cpu for p in done)


@dataclass(kw_only=True)
class Row:
    """One line of the table. ``ours``/``floor`` are in ``unit`` (seconds print as ms)."""

    scenario: str
    case: str
    size: str
    ours: float | None
    floor: float | None = None
    floor_kind: str = ""
    unit: str = "s"
    ratio: float | None = None
    target: str = ""
    ok: bool | None = None
    reps: int = 0
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def ratio(ours: float | None, floor: float | None) -> float | None:
    if ours is None or floor is None or floor <= 0:
        return None
    return ours / floor


def at_most(value: float | None, limit: float) -> bool | None:
    return None if value is None else value <= limit


def at_least(value: float | None, limit: float) -> bool | None:
    return None if value is None else value >= limit


def not_built(scenario: str, case: str, note: str) -> Row:
    """A scenario whose component does not exist yet: printed, never silently omitted."""
    return Row(scenario=scenario, case=case, size="—", ours=None, note=note)
