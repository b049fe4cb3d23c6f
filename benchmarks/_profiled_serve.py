"""``thoughtline serve`` with cProfile switched on and off by signals (``gateway_profile``).

SIGUSR1 starts profiling the event loop's thread and every store call (each runs on a store
worker thread, profiled there by its own profiler); SIGUSR2 stops and writes the merged stats to
the file named by ``TL_PROFILE_OUT``. Startup and the history's building are left out that way.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import signal
import sys
import threading
import time
from typing import Any

from thoughtline.store import aio

_MAIN = cProfile.Profile(time.thread_time)  # CPU, not wall: the machine is shared
_THREADS: dict[int, cProfile.Profile] = {}
_ON = threading.Event()
_original_run = aio.AsyncStore.run


async def _run(self: aio.AsyncStore, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    def profiled() -> Any:
        if not _ON.is_set():
            return fn(*args, **kwargs)
        profiler = _THREADS.setdefault(threading.get_ident(), cProfile.Profile(time.thread_time))
        profiler.enable()
        try:
            return fn(*args, **kwargs)
        finally:
            profiler.disable()

    return await _original_run(self, profiled)


def _start(*_: Any) -> None:
    _ON.set()
    _MAIN.enable()


def _stop(*_: Any) -> None:
    _MAIN.disable()
    _ON.clear()
    stats = pstats.Stats(_MAIN)
    for profiler in _THREADS.values():
        stats.add(profiler)
    stats.dump_stats(os.environ["TL_PROFILE_OUT"])


def main() -> None:
    aio.AsyncStore.run = _run  # type: ignore[method-assign]
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
    from thoughtline.cli.main import main as cli

    sys.argv = ["thoughtline", *sys.argv[1:]]
    cli()


if __name__ == "__main__":
    main()
