"""Fixtures for the robustness tests: a fresh state home per test, seeded through the store API.

The CLI helpers (``cli_support``) live with the CLI tests; they are shared, not copied.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_CLI_TESTS = str(Path(__file__).parent.parent / "cli")
if _CLI_TESTS not in sys.path:
    sys.path.insert(0, _CLI_TESTS)

from cli_support import Cli  # noqa: E402


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "home")
