"""Fixtures for the Anthropic end-to-end tests: one emulator per module, fake credentials."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from anthropic_support import KEYS

from thoughtline.testing.anthropic_emulator import AnthropicEmulator

_CLI_HELPERS = str(Path(__file__).resolve().parents[1] / "cli")
if _CLI_HELPERS not in sys.path:
    sys.path.append(_CLI_HELPERS)  # cli_support: the subprocess runner the CLI tests use


@pytest.fixture(scope="module")
def emu() -> Iterator[AnthropicEmulator]:
    with AnthropicEmulator() as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
