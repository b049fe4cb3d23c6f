"""Fixtures of the Responses end-to-end tests: one emulator per test (they queue failures), a
throwaway home, and a fake key in the variable the provider names."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from responses_support import KEY_ENV

from thoughtline.testing.responses_emulator import ResponsesEmulator


@pytest.fixture
def emu() -> Iterator[ResponsesEmulator]:
    with ResponsesEmulator("openai") as emulator:
        yield emulator


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture(autouse=True)
def fake_key() -> Iterator[None]:
    previous = os.environ.get(KEY_ENV)
    os.environ[KEY_ENV] = "sk-fake-responses"
    yield
    if previous is None:
        os.environ.pop(KEY_ENV, None)
    else:
        os.environ[KEY_ENV] = previous
