"""Fixtures of the session-level tests: shared loopback emulators and fake API keys.

Emulators are started once per test session and shared (stopping one waits out a server shutdown
tick); a module that changes an emulator's behaviour (``fail_next``, ``cut_stream_after``,
``chunk_delay``) asks for its own tagged instance. Every preset key variable the cases use holds
a fake, distinctive key.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from session_support import CASES

from thoughtline import config
from thoughtline.testing import ChatEmulator

FAKE_KEY_PREFIX = "sk-fake-session-test-"


class EmulatorPool:
    """Emulators by (personality, require_auth, tag), started on first use.

    Tests that only send requests share the untagged instances; a module that queues failures,
    cuts streams or slows chunks uses its own ``tag`` so a leftover never reaches another module.
    """

    def __init__(self) -> None:
        self._running: dict[tuple[str, bool, str], ChatEmulator] = {}

    def get(self, personality: str, *, auth: bool = True, tag: str = "") -> ChatEmulator:
        key = (personality, auth, tag)
        if key not in self._running:
            self._running[key] = ChatEmulator(personality, require_auth=auth).start()
        return self._running[key]

    def stop_all(self) -> None:
        stop_all(self._running.values())
        self._running.clear()


def stop_all(emulators: object) -> None:
    with ThreadPoolExecutor() as pool:  # each stop waits out the server's shutdown tick
        list(pool.map(ChatEmulator.stop, emulators))  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def pool() -> Iterator[EmulatorPool]:
    running = EmulatorPool()
    yield running
    running.stop_all()


@pytest.fixture(scope="session", autouse=True)
def fake_keys() -> Iterator[dict[str, str]]:
    """A fake key in every key variable of the presets the cases use (restored afterwards)."""
    names = {config.provider(case.provider).key_env for case in CASES} - {""}
    keys = {name: FAKE_KEY_PREFIX + name.lower() for name in sorted(names)}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in keys.items():
            mp.setenv(name, value)
        yield keys
