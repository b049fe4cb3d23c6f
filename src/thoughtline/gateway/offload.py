"""What of a large request runs off the event loop, so that one tenant's big body never stalls
another's requests (``/healthz`` included).

A request body from ``HEAVY_BYTES`` up is parsed, matched against the store (its digest chain)
and its upstream request built in a worker thread (``anyio``'s pool); a smaller one runs inline,
where a thread hop would cost more than the work. Python threads share the interpreter lock, but
the loop gets it back every switch interval (5 ms), so it goes on answering meanwhile.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

T = TypeVar("T")

#: From this body size up, a request's CPU work runs in a worker thread. About 2 ms of parsing
#: and matching on the loop: below it the hop costs more than it saves.
HEAVY_BYTES = 256 * 1024


async def off_loop(heavy: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, in a worker thread when ``heavy``."""
    if not heavy:
        return fn(*args, **kwargs)
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
