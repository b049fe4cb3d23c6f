"""Fixtures for the CLI tests: a fresh state home per test and loopback provider emulators.

Commands under test run as subprocesses of the installed ``thoughtline`` entry point (state read
back between steps goes through click's runner on the same ``main()``, in process, to stay fast).
Emulators run in this process (module-scoped) so a test can read exactly what each request carried.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Cli, DemoRun

from thoughtline.testing import ChatEmulator


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """The CLI with a fresh, empty state home (passed as THOUGHTLINE_HOME)."""
    return Cli(tmp_path / "home")


@pytest.fixture(scope="module")
def emu() -> Iterator[ChatEmulator]:
    """A DeepSeek-like reasoning model on loopback (must-echo ``reasoning_content``), no auth."""
    with ChatEmulator("deepseek", require_auth=False) as emulator:
        yield emulator


@pytest.fixture(scope="module")
def module_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli-home") / "home"


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    home = tmp_path_factory.mktemp("demo") / "home"
    # Wide enough that no table row wraps (rich assumes 80 columns off a terminal).
    result = Cli(home).run("--home", str(home), "demo", env={"COLUMNS": "200"}, timeout=120)
    return DemoRun(home=home, result=result)


@pytest.fixture
def demo_copy(demo_run: DemoRun, tmp_path: Path) -> Cli:
    """The CLI on a private copy of the demo's state (one session per scenario), safe to change."""
    assert demo_run.result.returncode == 0, demo_run.result.stderr
    home = tmp_path / "demo-home"
    shutil.copytree(demo_run.home, home)
    return Cli(home)
