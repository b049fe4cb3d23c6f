"""The project's seeded-bug set in its quick form (issue 47 item 2): it cannot go stale silently.

``benchmarks/mutants_seeded.py`` holds realistic one-line bugs, each an exact snippet of a module;
``python -m benchmarks.mutants`` applies them one at a time to a copy of ``src/`` and runs each
one's own tests (a minute or more in all). A refactor that moves a snippet leaves its mutant
"stale": it no longer seeds anything and the set reports a rate over fewer bugs (9 of 69 had gone
stale when issue 47 was filed). Here every mutant must still apply, and a few cheap ones, picked
by their measured run time, must still be caught. Nothing here touches the checkout: the
mutants are applied to a copy in this test's own temporary directory (safe under pytest-xdist).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``benchmarks`` is a top-level package beside ``src``

from benchmarks import mutants  # noqa: E402
from benchmarks.mutants_seeded import MUTANTS, Mutant  # noqa: E402

#: Cheap mutants across areas, run in CI: each costs 2-4.5 s of CPU (most of it one pytest
#: start; measured with ``getrusage``, the higher figure on a loaded machine). Replay scope, the
#: estimator, the fallback's wordings, the transport's retries, and one of issue 47's classes (a
#: failed tool result on Gemini's wire).
SAMPLE = ("M10", "M52", "M22", "M75", "M121")


def test_every_seeded_mutant_still_applies() -> None:
    # Snippet found exactly once, the mutated module compiles, the tests it names exist.
    stale = {m.id: problem for m in MUTANTS if (problem := mutants.stale(m)) is not None}
    assert stale == {}, ("seeded mutants no longer match the code; re-express each bug against "
                         "today's code in benchmarks/mutants_seeded.py")


def test_the_ids_are_unique_and_each_mutant_names_its_tests_under_tests() -> None:
    ids = [m.id for m in MUTANTS]
    assert len(ids) == len(set(ids))
    outside = [(m.id, t) for m in MUTANTS for t in m.tests if not t.startswith("tests/")]
    assert outside == []


def test_a_snippet_that_moved_is_reported_stale_not_run() -> None:
    # The check itself can fail: a snippet that is gone, found twice, or a bug that breaks the
    # module's syntax (which would "kill" without testing anything) are all reported.
    base = next(m for m in MUTANTS if mutants.stale(m) is None)  # (one that applies)
    gone = Mutant(id="X1", area="test", file=base.file, old=base.old + "\n# moved away",
                  new=base.new, tests=base.tests, what="a moved snippet")
    twice = Mutant(id="X2", area="test", file="replay.py", old="\n", new="\n\n",
                   tests=base.tests, what="a snippet found many times")
    broken = Mutant(id="X3", area="test", file=base.file, old=base.old, new=base.new + " (",
                    tests=base.tests, what="a bug that is a syntax error")
    untested = Mutant(id="X4", area="test", file=base.file, old=base.old, new=base.new,
                      tests=("tests/no_such_test.py",), what="tests that are gone")
    assert "found 0 times" in (mutants.stale(gone) or "")
    assert "times in replay.py" in (mutants.stale(twice) or "")
    assert "does not compile" in (mutants.stale(broken) or "")
    assert "no test path tests/no_such_test.py" in (mutants.stale(untested) or "")


@pytest.mark.parametrize("ident", SAMPLE)
def test_a_cheap_seeded_mutant_is_caught(ident: str, tmp_path: Path) -> None:
    (mutant,) = [m for m in MUTANTS if m.id == ident]
    copy = mutants.copy_src(tmp_path)
    verdict, _, tail = mutants.run(copy, mutant, basetemp=tmp_path / "pytest")
    assert verdict == "killed", f"{ident} ({mutant.what}): {verdict}: {tail}"
    assert (copy / "thoughtline" / mutant.file).read_text("utf-8").count(mutant.old) == 1
