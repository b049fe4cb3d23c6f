"""The package type-checks: mypy on ``src/thoughtline`` with the settings of ``[tool.mypy]`` in
pyproject.toml reports no error (issue 47). Run through mypy's API, so the suite needs no other
command; the cache sits in the checkout's ``.mypy_cache`` (a cold run takes about 25 s, a warm
one about a second)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(300)  # a cold run on a busy CI machine has taken ~60 s
def test_mypy_reports_no_error() -> None:
    stdout, stderr, status = api.run([
        "--config-file", str(ROOT / "pyproject.toml"),
        "--cache-dir", str(ROOT / ".mypy_cache"),
        str(ROOT / "src" / "thoughtline"),
    ])
    assert status == 0, f"mypy found errors:\n{stdout}{stderr}"
