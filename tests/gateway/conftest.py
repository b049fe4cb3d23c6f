"""Fixtures of the gateway tests: a DeepSeek-personality emulator and the upstream's fake key."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from gateway_support import UPSTREAM_KEY, UPSTREAM_KEY_ENV

from thoughtline.testing import ChatEmulator


@pytest.fixture(autouse=True)
def upstream_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
    return UPSTREAM_KEY


@pytest.fixture
def deepseek() -> Iterator[ChatEmulator]:
    """A fresh DeepSeek emulator per test: ``received`` holds only this test's requests."""
    with ChatEmulator("deepseek") as emu:
        yield emu
