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
    .venv/bin/python -m benchmarks.mutants --check     # only whether each still applies

A mutant whose snippet is not found exactly once, whose mutated module does not compile or whose
test paths are gone is reported as stale (an error, not a kill). ``tests/test_seeded_set.py``
runs the check and a few cheap mutants in CI, so the set cannot go stale silently.
"""

from __future__ import annotations

import importlib.util
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


def stale(mutant: Mutant, src: Path = ROOT / "src") -> str | None:
    """Why ``mutant`` cannot be applied to the package under ``src`` (None: it applies).

    Its snippet must occur exactly once, the mutated module must still compile (a syntax error
    would count as a kill without testing anything) and its test paths must exist."""
    path = src / "thoughtline" / mutant.file
    if not path.is_file():
        return f"no file {mutant.file}"
    text = path.read_text("utf-8")
    count = text.count(mutant.old)
    if count != 1:
        return f"snippet found {count} times in {mutant.file}"
    if mutant.new == mutant.old:
        return "the bug changes nothing"
    try:
        compile(text.replace(mutant.old, mutant.new), str(path), "exec")
    except SyntaxError as exc:
        return f"the mutated {mutant.file} does not compile: {exc.msg} (line {exc.lineno})"
    missing = [t for t in mutant.tests if not (ROOT / t).exists()]
    if missing or not mutant.tests:
        return f"no test path {' '.join(missing)}" if missing else "no tests named"
    return None


def _apply(copy: Path, mutant: Mutant) -> tuple[Path, str] | str:
    """Apply ``mutant`` in ``copy``; (file, its original text), or why it cannot be applied."""
    problem = stale(mutant, copy)
    if problem is not None:
        return problem
    path = copy / "thoughtline" / mutant.file
    text = path.read_text("utf-8")
    path.write_text(text.replace(mutant.old, mutant.new), "utf-8")
    return path, text


def _env(copy: Path) -> dict[str, str]:
    # (An xdist worker's variables are not passed on: the run is a pytest of its own.)
    inherited = {k: v for k, v in os.environ.items()
                 if not k.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))}
    return {**inherited, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}


def command(mutant: Mutant, basetemp: Path | None = None) -> list[str]:
    """The pytest run of ``mutant``'s tests: stop at the first failure, in one process (``-n 0``
    where pytest-xdist is installed), nothing written to the checkout; ``basetemp``: where its
    temporary files go (a caller running several at once gives each its own)."""
    args = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly",
            "-p", "no:cacheprovider"]
    if importlib.util.find_spec("xdist") is not None:
        args += ["-n", "0"]
    if basetemp is not None:
        args.append(f"--basetemp={basetemp}")
    return [*args, *mutant.tests]


def run(copy: Path, mutant: Mutant, basetemp: Path | None = None) -> tuple[str, float, str]:
    """(verdict, seconds, last output line) for one mutant, applied to ``copy`` and restored."""
    applied = _apply(copy, mutant)
    if isinstance(applied, str):
        return "stale", 0.0, applied
    path, original = applied
    start = time.monotonic()
    try:
        done = subprocess.run(command(mutant, basetemp), cwd=ROOT, env=_env(copy),
                              capture_output=True, text=True, timeout=TIMEOUT, check=False)
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


def copy_src(where: Path) -> Path:
    """A copy of ``src/`` in the directory ``where``, checked to be the package imported."""
    copy = where / "src"
    shutil.copytree(ROOT / "src", copy, ignore=shutil.ignore_patterns("__pycache__"))
    probe = "import thoughtline; print(thoughtline.__file__)"
    found = subprocess.run([sys.executable, "-c", probe], env=_env(copy), capture_output=True,
                           text=True, check=True).stdout.strip()
    if not found.startswith(str(copy)):
        raise SystemExit(f"the copy is not the imported package ({found}); aborting")
    return copy


def main(argv: list[str]) -> int:
    if "--list" in argv:
        for m in MUTANTS:
            print(f"{m.id}  {m.area:<12} {m.file}: {m.what}")
        return 0
    if "--check" in argv:
        problems = [(m.id, p) for m in MUTANTS if (p := stale(m)) is not None]
        for ident, problem in problems:
            print(f"{ident} stale: {problem}")
        print(f"{len(MUTANTS) - len(problems)} of {len(MUTANTS)} mutants apply")
        return 1 if problems else 0
    only = "--invariants-only" in argv
    names = [a for a in argv if not a.startswith("--")]
    chosen = [m for m in MUTANTS if not names or m.id in names]
    if only:  # which of the new invariant tests catch each mutant by themselves
        chosen = [replace(m, tests=tuple(t for t in m.tests if t.startswith("tests/invariants/")))
                  for m in chosen]
        chosen = [m for m in chosen if m.tests]
    with tempfile.TemporaryDirectory(prefix="tl-mutants-") as tmp:
        copy = copy_src(Path(tmp))
        results: dict[str, list[str]] = {"killed": [], "survived": [], "stale": [], "error": []}
        for mutant in chosen:
            verdict, seconds, tail = run(copy, mutant)
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
