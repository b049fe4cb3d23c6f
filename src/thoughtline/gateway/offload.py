"""What of a large request runs off the event loop, so that one tenant's big body never stalls
another's requests (``/healthz`` included).

A request body from ``HEAVY_BYTES`` up is parsed, matched against the store (its digest chain)
and its upstream request built in a worker thread (``anyio``'s pool); a smaller one runs inline,
where a thread hop would cost more than the work. Python threads share the interpreter lock, but
the loop gets it back every switch interval (5 ms), so it goes on answering meanwhile.

Except during a garbage collection: the cyclic collector holds the lock for a whole pass over
every tracked object. An 8 MB ``count_tokens`` body of 40,000 messages grows the heap from ~60,000
tracked objects to ~300,000 (the parsed body, the memo's items, the walk), and as it grows the
collector's full pass fires each time the heap has grown by a quarter: five or six passes over
three such requests, each 25-120 ms on the shared 2-core machine, and each one a stall of
``/healthz`` as long (``benchmarks/gateway_stress.py``; seen with ``gc.callbacks``). So a heavy
call runs with the collector paused.

What a call leaves alive is not frozen after it: that was tried, and a 600-turn Chat request
(822 KiB, heavy) then cost the gateway 31.5-33 ms of CPU against 12-15.5 ms without it (A/B,
interleaved, same emulator) — every request froze the memo's new items, the cap undid the freeze,
and the next full pass rescanned all of them — while ``/healthz`` beside the 8 MB body moved
within noise (worst poll 137-268 ms frozen, 144-253 ms paused only, at loads of 5-8).
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

T = TypeVar("T")

#: From this body size up, a request's CPU work runs in a worker thread. About 2 ms of parsing
#: and matching on the loop: below it the hop costs more than it saves.
HEAVY_BYTES = 256 * 1024

_LOCK = threading.Lock()
#: Heavy calls running now, and whether the first of them found the collector enabled (the
#: collector is the process's: the last one to end restores it).
_state = {"running": 0, "paused": False}


async def off_loop(heavy: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, in a worker thread when ``heavy`` (the collector paused)."""
    if not heavy:
        return fn(*args, **kwargs)
    return await anyio.to_thread.run_sync(functools.partial(collector_paused, fn, *args,
                                                            **kwargs))


def collector_paused(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` with the cyclic collector off; when the last such call ends,
    the collector is back on. A collector
    someone else turned off stays off."""
    with _LOCK:
        if not _state["running"]:
            _state["paused"] = gc.isenabled()
            gc.disable()
        _state["running"] += 1
    try:
        return fn(*args, **kwargs)
    finally:
        with _LOCK:
            _state["running"] -= 1
            if not _state["running"] and _state["paused"]:
                gc.enable()


def settle() -> None:
    """Once warm, before the first request: start-up's garbage collected, and what start-up
    left alive (modules, classes, route tables: it lives as long as the process) frozen out of
    every later pass. Measured with 512 streams open, start-up's ~59,000 objects were a third
    of each full pass: passes of 74, 128 and 186 ms became 25, 98 and 129 ms."""
    if gc.isenabled():
        gc.collect()
        gc.freeze()
