"""Without a reachable PostgreSQL server the store suite fails loudly; it never skips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_postgres_tests_fail_not_skip_when_the_server_is_unreachable(tmp_path: Path) -> None:
    here = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
           "THOUGHTLINE_TEST_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/test"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(here / "test_store_verdicts.py"),
         "-p", "no:randomly", "-p", "no:cacheprovider", "-o", "addopts="],
        capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert run.returncode == 1, run.stdout
    closing = run.stdout.strip().splitlines()[-1]  # sqlite passes; postgres errors, none skip
    assert "4 passed" in closing and "4 error" in closing and "skipped" not in closing, closing
    assert "PostgreSQL is not reachable at postgresql://postgres@127.0.0.1:1/test" in run.stdout
