"""Fixtures of the compaction tests: a must-echo emulator and a fake key for the deepseek preset."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from thoughtline import open_store
from thoughtline.store.base import Store
from thoughtline.testing import ChatEmulator

FAKE_KEY = "sk-fake-compaction-test"


@pytest.fixture(autouse=True)
def deepseek_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("DEEPSEEK_API_KEY", FAKE_KEY)
    return FAKE_KEY


@pytest.fixture(scope="module")
def emu() -> Iterator[ChatEmulator]:
    """DeepSeek-like: ``reasoning_content`` on every reply, 400 when a tool-call turn comes back
    without it (the must-echo rule, api-docs.deepseek.com/guides/thinking_mode)."""
    with ChatEmulator("deepseek") as emulator:
        yield emulator


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def store(home: Path) -> Iterator[Store]:
    opened = open_store(None, home)
    yield opened
    opened.close()
