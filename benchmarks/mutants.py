"""Seeded-bug run: apply each mutant of ``mutants_seeded.MUTANTS`` and see whether its tests fail.

Not a test (pytest collects only ``tests/``). Each mutant is one exact snippet of a module
replaced by a realistic bug (a flipped condition, a swapped argument, a dropped check). The run
copies ``src/`` to a temporary directory once, applies one mutant at a time to that copy, runs the
mutant's own targeted test files with ``-x -q`` against the copy (``PYTHONPATH`` puts it ahead of
the editable install; no bytecode is written, so a restored module is never shadowed by a stale
``.pyc``), restores the file, and prints killed / survived. The working tree is never touched.

    .venv/bin/python -m benchmarks.mutants            # every mutant
    .venv/bin/python -m benchmarks.mutants M07 M31    # just these
    .venv/bin/python -m benchmarks.mutants --list
    .venv/bin/python -m benchmarks.mutants --invariants-only   # only tests/invariants/ files

A mutant whose snippet is not found exactly once is reported as stale (an error, not a kill).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from benchmarks.mutants_seeded import MUTANTS, Mutant

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 600.0  # seconds per mutant: a hang counts as killed (the tests did not pass)


def _apply(copy: Path, mutant: Mutant) -> tuple[Path, str] | str:
    """Apply ``mutant`` in ``copy``; (file, its original text), or why it cannot be applied."""
    path = copy / "thoughtline" / mutant.file
    if not path.is_file():
        return f"no file {mutant.file}"
    text = path.read_text("utf-8")
    count = text.count(mutant.old)
    if count != 1:
        return f"snippet found {count} times in {mutant.file}"
    path.write_text(text.replace(mutant.old, mutant.new), "utf-8")
    return path, text


def _run(copy: Path, mutant: Mutant) -> tuple[str, float, str]:
    """(verdict, seconds, last output line) for one mutant."""
    applied = _apply(copy, mutant)
    if isinstance(applied, str):
        return "stale", 0.0, applied
    path, original = applied
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly",
               "-p", "no:cacheprovider", *mutant.tests]
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT, check=False)
        verdict = "survived" if done.returncode == 0 else "killed"
        if done.returncode in (4, 5):  # usage error / no tests collected: not a kill
            verdict = "error"
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        tail = lines[-1] if lines else done.stderr.strip()[-200:]
    except subprocess.TimeoutExpired:
        verdict, tail = "killed", f"timed out after {TIMEOUT:g} s"
    finally:
        path.write_text(original, "utf-8")
    return verdict, time.monotonic() - start, tail


def _check_copy(copy: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    probe = "import thoughtline; print(thoughtline.__file__)"
    where = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    if not where.startswith(str(copy)):
        raise SystemExit(f"the copy is not the imported package ({where}); aborting")


def main(argv: list[str]) -> int:
    if "--list" in argv:
        for m in MUTANTS:
            print(f"{m.id}  {m.area:<12} {m.file}: {m.what}")
        return 0
    only = "--invariants-only" in argv
    names = [a for a in argv if not a.startswith("--")]
    chosen = [m for m in MUTANTS if not names or m.id in names]
    if only:  # which of the new invariant tests catch each mutant by themselves
        chosen = [replace(m, tests=tuple(t for t in m.tests if t.startswith("tests/invariants/")))
                  for m in chosen]
        chosen = [m for m in chosen if m.tests]
    with tempfile.TemporaryDirectory(prefix="tl-mutants-") as tmp:
        copy = Path(tmp) / "src"
        shutil.copytree(ROOT / "src", copy, ignore=shutil.ignore_patterns("__pycache__"))
        _check_copy(copy)
        results: dict[str, list[str]] = {"killed": [], "survived": [], "stale": [], "error": []}
        for mutant in chosen:
            verdict, seconds, tail = _run(copy, mutant)
            results[verdict].append(mutant.id)
            print(f"{mutant.id} {verdict:<8} {seconds:6.1f}s  {mutant.area:<12} {mutant.what}"
                  + ("" if verdict == "killed" else f"\n      {tail}"), flush=True)
    counted = len(results["killed"]) + len(results["survived"])
    rate = 100.0 * len(results["killed"]) / counted if counted else 0.0
    print(f"\n{len(results['killed'])} killed, {len(results['survived'])} survived "
          f"({rate:.1f} % killed of {counted}); stale {len(results['stale'])}, "
          f"errors {len(results['error'])}")
    for name in ("survived", "stale", "error"):
        if results[name]:
            print(f"{name}: {' '.join(results[name])}")
    return 0 if not results["survived"] and not results["stale"] else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
