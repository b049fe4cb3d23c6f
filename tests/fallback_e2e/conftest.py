"""Fixtures for the learn-once fallback end-to-end tests: emulators and throwaway homes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from thoughtline.testing import ChatEmulator


@pytest.fixture
def emulator() -> Iterator[Callable[[str], ChatEmulator]]:
    """Start loopback emulators by personality name (no auth); all stop after the test."""
    started: list[ChatEmulator] = []

    def start(personality: str) -> ChatEmulator:
        emu = ChatEmulator(personality, require_auth=False).start()
        started.append(emu)
        return emu

    yield start
    for emu in started:
        emu.stop()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A state directory of its own (store, logs, config.toml) for this test."""
    path = tmp_path / "home"
    path.mkdir()
    return path
