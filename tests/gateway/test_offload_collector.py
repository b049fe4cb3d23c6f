"""A heavy request's work runs with the cyclic collector paused, and nothing it leaves alive is
frozen (issue 45 item 2: full collections over a large body's objects held ``/healthz`` for as
long as each pass took; a freeze per request doubled a 600-turn request's CPU). Observed through
``gc``, never timed."""

from __future__ import annotations

import gc
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from thoughtline.gateway import app as app_module
from thoughtline.gateway import offload
from thoughtline.gateway.app import Gateway
from thoughtline.gateway.config import parse
from thoughtline.store import SQLiteStore
from thoughtline.testing import ChatEmulator


@pytest.fixture(autouse=True)
def collector() -> Iterator[None]:
    """Each test starts with the collector on and nothing frozen, and leaves it so."""
    was = gc.isenabled()
    gc.unfreeze()
    gc.enable()
    yield
    gc.unfreeze()
    if was:
        gc.enable()
    else:
        gc.disable()


def _made() -> tuple[bool, list[dict[str, int]]]:
    """Whether the collector ran during the call, and some container objects made in it."""
    return gc.isenabled(), [{"n": n} for n in range(1000)]


def test_a_heavy_call_runs_with_the_collector_paused_and_freezes_nothing() -> None:
    collecting, _ = anyio.run(offload.off_loop, True, _made)
    assert collecting is False
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_light_call_leaves_the_collector_alone() -> None:
    collecting, _ = anyio.run(offload.off_loop, False, _made)
    assert collecting is True
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_the_collector_comes_back_when_the_last_of_overlapping_heavy_calls_ends() -> None:
    started, release = threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def long_call() -> None:
        started.set()
        release.wait(30)
        seen["long, at its end"] = gc.isenabled()

    def short_call() -> None:
        seen["short"] = gc.isenabled()

    long = threading.Thread(target=offload.collector_paused, args=(long_call,))
    long.start()
    assert started.wait(30)
    offload.collector_paused(short_call)
    seen["between"] = gc.isenabled()
    release.set()
    long.join(30)
    assert seen == {"short": False, "between": False, "long, at its end": False}
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off_and_nothing_is_frozen() -> None:
    gc.disable()
    offload.collector_paused(_made)
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_the_collector_comes_back_when_the_call_raises() -> None:
    def fails() -> None:
        raise ValueError("bad body")

    with pytest.raises(ValueError, match="bad body"):
        offload.collector_paused(fails)
    assert gc.isenabled()


def test_settling_freezes_what_start_up_left_alive() -> None:
    offload.settle()
    assert gc.get_freeze_count() > 0
    assert gc.isenabled()


def test_settling_leaves_a_collector_someone_else_turned_off_alone() -> None:
    gc.disable()
    offload.settle()
    assert gc.get_freeze_count() == 0


def test_a_warmed_gateway_has_settled(tmp_path: Path, deepseek: ChatEmulator,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    settled: list[bool] = []
    monkeypatch.setattr(app_module, "settle", lambda: settled.append(True))
    config = parse(tomllib.loads(
        f'[[upstream]]\nname = "ds"\nprovider = "deepseek"\nbase_url = "{deepseek.base_url}"\n'
        'api_key_env = "TL_SETTLE_KEY"\n'))
    gateway = Gateway(config, SQLiteStore(tmp_path / "state.db"),
                      environ={"TL_SETTLE_KEY": "sk-settle"})
    anyio.run(gateway.warm)
    assert settled == [True]
