"""Scenario 2 — resume: a fresh process opens ``state.db``, loads an N-turn session and builds its
first request.

The parent writes one session of N synthetic turns through the store API, then runs
``_resume_child.py`` several times. Two numbers per size: the time inside the child from just
before ``open_store`` to the request bytes (what the target is about; the floor beside it is bare
``sqlite3`` reading every row the session stored — its canonical history and its wire forms —
plus ``orjson.dumps`` of the same body), and the child's whole-process wall time (the floor beside
it: ``python -c pass``, the interpreter start alone). Before the in-process clock starts, the child
resumes a small session of the same API from another file and builds its request (as
``benchmarks.instructions`` does): what a process pays once whatever the history (importing the
API's codec, its route tables) is that warm-up's time, in the row's note, not in the row; the
whole-process row counts it (on both sides of its difference). Sessions are written as a session
writes the turns it answers, so each turn also has its stored wire form (issue 17). A spliced
resume reads only the entries and the forms (the canonical rows are verified when decoded), so one
more row sets it against a bare read of just those rows: the stricter floor.

Children run with bytecode written and read (``measure.child_env``), as an installed package does.
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
SIZES = (0, 100, 1_000, 5_000)
QUICK_SIZES = (0, 100)
TARGET_N = 1_000
READ_TARGET = 1.5  # resume in process ≤ 1.5× the bare read of the same rows, every API (issue 44)
PROCESS_TARGET = 2.0  # what the history adds to a chat -r process ≤ 2× a bare reader's (issue 44)
BUILD_TARGET = 2.0  # the first (cold) request build ≤ 2× serializing the same body
MEMORY_TARGET = 10 * 1024  # bytes kept per stored turn in a resumed process
WARM_TURNS = 10  # the warm-up session resumed first in each child (imports, route tables)
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


def _other_apis(turns: int = TARGET_N) -> list[tuple[str, Any, list[Any]]]:
    """(label, provider, history) of a ``turns``-turn session on each other API with rows here:
    Responses, Gemini, Bedrock, Anthropic and Interactions, each spliced from its stored wire
    forms."""
    from dataclasses import replace

    from benchmarks import (
        anthropic_rows,
        bedrock_rows,
        gemini_rows,
        interactions_rows,
        responses_rows,
    )
    from thoughtline import config

    presets = config.presets()
    anthropic = replace(presets["anthropic"], model=anthropic_rows.MODEL)
    bedrock = replace(presets["bedrock"], region="us-east-1")
    return [
        ("responses openai (spliced)", presets["openai-responses"],
         responses_rows.history(turns)),
        ("gemini (spliced)", presets["gemini"], list(gemini_rows.history(turns))),
        ("bedrock claude (spliced)", bedrock, bedrock_rows.history(bedrock.model, turns)),
        ("anthropic (spliced)", anthropic,
         list(anthropic_rows.history(turns, 50))),
        ("interactions gemini, stateless (spliced)", interactions_rows.provider(),
         interactions_rows.history(turns)),
    ]


def write_other(home: Path, provider: Any, history: list[Any]) -> str:
    store = open_store(None, home)
    try:
        session = Session.create(store, provider, title="bench other API")
        session.append(history)
        return session.id
    finally:
        store.close()


def other_rows(tmp: str, runs: int) -> list[Row]:
    rows: list[Row] = []
    warm_sessions = {label: (provider, history) for label, provider, history
                     in _other_apis(WARM_TURNS)}
    for label, provider, history in _other_apis():
        home = Path(tmp, label.split()[0])
        session_id = write_other(home, provider, history)
        warm_home = Path(tmp, "warm-" + label.split()[0])
        warm = (warm_home / "state.db", write_other(warm_home, *warm_sessions[label]))
        run_child(home / "state.db", session_id, warm)  # warm the page cache and bytecode
        samples = [run_child(home / "state.db", session_id, warm)[0] for _ in range(runs)]
        inproc = statistics.median(s["inproc_s"] for s in samples)
        floor = statistics.median(s["floor_s"] for s in samples)
        rows.append(Row(scenario=SCENARIO, case=f"open → load → first request bytes (in process), "
                        f"{label}", size=f"N={TARGET_N:,}", ours=inproc, floor=floor,
                        floor_kind="sqlite3 read of the session's rows + orjson.dumps",
                        ratio=ratio(inproc, floor), target=f"≤ {READ_TARGET:g}× floor",
                        ok=at_most(ratio(inproc, floor), READ_TARGET), reps=runs,
                        note=_breakdown({k: statistics.median(s[k] for s in samples)
                                         for k in ("warm_s", "open_s", "load_s", "build_s",
                                                   "dumps_s", "cpu_s", "floor_cpu_s",
                                                   "next_s")}),
                        extra={"turns": TARGET_N, "same_bytes": samples[0]["same_bytes"]}))
    return rows


def child_memory(db: Path, session_id: str) -> dict[str, Any]:
    return json.loads(process([sys.executable, str(CHILD), str(db), session_id,
                               "memory"]).stdout)


def run_child(db: Path, session_id: str, warm: tuple[Path, str] | None = None,
              ) -> tuple[dict[str, Any], float]:
    """The child's own numbers (its floors read after the resume, in the same process; ``warm``:
    the session it resumes first, before its clock), with the whole-process wall and CPU seconds
    of a child that only resumes and builds (no floors, no warm-up)."""
    first = ["warm", str(warm[0]), warm[1]] if warm else []
    numbers = json.loads(process([sys.executable, str(CHILD), str(db), session_id,
                                  *first]).stdout)
    done = process([sys.executable, str(CHILD), str(db), session_id, "process"])
    numbers["process_cpu_s"] = done.cpu
    return numbers, done.wall


def run(*, quick: bool) -> list[Row]:
    sizes, runs = (QUICK_SIZES, QUICK_RUNS) if quick else (SIZES, RUNS)
    bare, _ = processes([sys.executable, "-c", "pass"], runs)
    rows: list[Row] = []
    walls: dict[int, float] = {}
    cpus: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="tl-bench-resume-") as tmp:
        warm = (Path(tmp, "warm", "state.db"), write_session(Path(tmp, "warm"), WARM_TURNS))
        for n in sizes:
            home = Path(tmp, str(n))
            session_id = write_session(home, n)
            run_child(home / "state.db", session_id, warm)  # warm the page cache and bytecode
            samples = [run_child(home / "state.db", session_id, warm) for _ in range(runs)]
            walls[n] = statistics.median(w for _, w in samples)
            cpus[n] = statistics.median(s["process_cpu_s"] for s, _ in samples)
            if n == 0:
                continue  # the empty session is the baseline of "what the history adds"
            memory = child_memory(home / "state.db", session_id)
            rows.extend(_rows(n, samples, bare, runs, (walls[0], cpus[0]), memory))
        if not quick:
            rows.extend(other_rows(tmp, runs))
    return rows


def _rows(n: int, samples: list[tuple[dict[str, Any], float]], bare: float, runs: int,
          empty: tuple[float, float], memory: dict[str, Any]) -> list[Row]:
    """The rows of one size; ``empty``: the wall and CPU seconds of the empty session's
    process."""
    def med(key: str) -> float:
        return statistics.median(s[key] for s, _ in samples)

    inproc, floor, read_floor = med("inproc_s"), med("floor_s"), med("read_floor_s")
    wall = statistics.median(w for _, w in samples)
    targeted = n == TARGET_N
    breakdown = {k: med(k) for k in ("import_s", "warm_s", "open_s", "load_s", "build_s",
                                      "dumps_s", "cpu_s", "floor_cpu_s", "next_s")}
    first = samples[0][0]
    extra = {"turns": n, "bytes": first["bytes"], "same_bytes": first["same_bytes"],
             **breakdown}
    size = f"N={n:,}"
    empty_wall, empty_cpu = empty
    added = max(wall - empty_wall, 0.0)
    added_cpu = med("process_cpu_s") - empty_cpu
    build, serialize = med("build_s"), med("serialize_s")
    per_turn = memory["kept_bytes"] / max(n, 1)

    def target(value: float, goal: float, text: str) -> tuple[str, bool | None]:
        return (text, at_most(value, goal)) if targeted else ("", None)

    read_t, read_ok = target(ratio(inproc, floor), READ_TARGET, f"≤ {READ_TARGET:g}× floor")
    proc_t, proc_ok = target(ratio(added, floor), PROCESS_TARGET, f"≤ {PROCESS_TARGET:g}× floor")
    build_t, build_ok = target(ratio(build, serialize), BUILD_TARGET, f"≤ {BUILD_TARGET:g}× floor")
    mem_t, mem_ok = target(per_turn, MEMORY_TARGET, f"≤ {MEMORY_TARGET // 1024} KiB")
    return [
        Row(scenario=SCENARIO, case="open → load → first request bytes (in process)",
            size=size, ours=inproc, floor=floor,
            floor_kind="sqlite3 read of the session's rows + orjson.dumps",
            ratio=ratio(inproc, floor),
            target=read_t, ok=read_ok, reps=runs, extra=extra, note=_breakdown(breakdown)),
        Row(scenario=SCENARIO, case="open → load → first request bytes, beside only the rows it "
            "reads", size=size, ours=inproc, floor=read_floor,
            floor_kind="sqlite3 read of the entries and wire forms + orjson.dumps",
            ratio=ratio(inproc, read_floor), reps=runs, extra={"turns": n}),
        Row(scenario=SCENARIO, case="what the history adds to a chat -r process", size=size,
            ours=added, floor=floor, floor_kind="sqlite3 read of the session's rows + orjson.dumps",
            ratio=ratio(added, floor), target=proc_t, ok=proc_ok, reps=runs,
            note=f"process wall {wall * 1e3:.0f} ms − the same process on an empty session "
                 f"{empty_wall * 1e3:.0f} ms (python -c pass: {bare * 1e3:.0f} ms; imports "
                 f"{breakdown['import_s'] * 1e3:.0f} ms); in CPU time {added_cpu * 1e3:.0f} ms "
                 f"added, {ratio(added_cpu, med('floor_cpu_s')) or 0:.2f}× the floor's",
            extra={"turns": n, "wall_s": wall, "empty_wall_s": empty_wall}),
        Row(scenario=SCENARIO, case="cold build: first request after resume (spliced)",
            size=size, ours=build, floor=serialize, floor_kind="orjson.dumps of the same body",
            ratio=ratio(build, serialize), target=build_t, ok=build_ok, reps=runs,
            extra={"turns": n}),
        Row(scenario=SCENARIO, case="peak memory per stored turn (resume and first request)",
            size=size, ours=memory["peak_bytes"] / max(n, 1), unit="B/turn",
            note=f"{memory['peak_bytes'] / max(n, 1) / 1024:.2f} KiB per turn at the peak "
                 "(tracemalloc; the request's own bytes are part of it)",
            extra={"turns": n, **memory}),
        Row(scenario=SCENARIO, case="memory kept per stored turn (resumed process)", size=size,
            ours=per_turn, unit="B/turn",
            note=f"{per_turn / 1024:.2f} KiB per turn ({memory['kept_bytes'] / 1e6:.1f} MB kept, "
                 f"peak {memory['peak_bytes'] / 1e6:.1f} MB, tracemalloc)",
            target=mem_t, ok=mem_ok, extra={"turns": n, **memory}),
    ]


def _breakdown(seconds: dict[str, float]) -> str:
    ms = {k: v * 1e3 for k, v in seconds.items()}
    ms["cpu_ratio"] = ratio(seconds["cpu_s"], seconds["floor_cpu_s"]) or 0.0
    return ("open {open_s:.1f} + load {load_s:.1f} + build {build_s:.1f} + dumps {dumps_s:.1f} ms;"
            " CPU time {cpu_s:.1f} ms (the floor's {floor_cpu_s:.1f} ms: {cpu_ratio:.2f}×, what to"
            " read when the load average is above the core count); the next request's build"
            " {next_s:.1f} ms; before the clock, the first use (a small session resumed and built)"
            " {warm_s:.1f} ms").format(**ms)
