"""How the gateway benchmark times requests: paired latency and requests per second.

Latency: the same next request sent through a proxy and (its floor) straight to the emulator,
interleaved call by call on keep-alive connections, so drift on a shared machine hits both
alike; added p50 = the difference of the two medians, added p99 = the p99 of the call-by-call
differences (a streamed request is timed to its last byte). The
proxy's own CPU per request comes from its process (``gateway_procs.cpu_seconds``) around the
same calls. Requests per second: ``clients`` threads, each on its own connection, sending whole
requests for a fixed time.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

WARMUP = 3  # connections, caches, the gateway's first store writes


def timed(client: httpx.Client, url: str, body: bytes, stream: bool) -> float:
    start = time.perf_counter()
    if stream:
        with client.stream("POST", url, content=body) as response:
            if response.is_error:
                response.read()  # so the error names what the server said
            response.raise_for_status()
            for _ in response.iter_bytes():
                pass
    else:
        client.post(url, content=body).raise_for_status()
    return time.perf_counter() - start


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass(frozen=True, kw_only=True, slots=True)
class Call:
    """One request to time: where it goes, its bytes and its headers' client."""

    client: httpx.Client
    url: str
    body: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class Paired:
    ours_p50: float
    ours_p99: float
    direct_p50: float
    direct_p99: float
    #: p99 of the call-by-call differences (ours − its interleaved direct call): a stall of the
    #: direct call alone cannot make it negative, as p99(ours) − p99(direct) could on few calls.
    added_p99: float
    reps: int
    #: CPU seconds per request of the measured proxy process (warm-up included); None: unknown.
    cpu: float | None = None

    @property
    def added_p50(self) -> float:
        return self.ours_p50 - self.direct_p50

    def to_json(self) -> dict[str, float | int | None]:
        return {"ours_p50": self.ours_p50, "ours_p99": self.ours_p99,
                "direct_p50": self.direct_p50, "direct_p99": self.direct_p99,
                "added_p50": self.added_p50, "added_p99": self.added_p99,
                "reps": self.reps, "cpu_per_request": self.cpu}


def paired(ours: Call, direct: Call, *, stream: bool, reps: int,
           cpu: Callable[[], float] | None = None) -> Paired:
    """``reps`` interleaved calls of ``ours`` and ``direct`` after a warm-up; ``cpu()`` (the
    proxy's CPU seconds so far) is read around all of them."""
    before = cpu() if cpu is not None else 0.0
    for _ in range(WARMUP):
        timed(ours.client, ours.url, ours.body, stream)
        timed(direct.client, direct.url, direct.body, stream)
    mine: list[float] = []
    floor: list[float] = []
    for _ in range(reps):
        mine.append(timed(ours.client, ours.url, ours.body, stream))
        floor.append(timed(direct.client, direct.url, direct.body, stream))
    spent = (cpu() - before) / (reps + WARMUP) if cpu is not None else None
    return Paired(ours_p50=statistics.median(mine), ours_p99=quantile(mine, 0.99),
                  direct_p50=statistics.median(floor), direct_p99=quantile(floor, 0.99),
                  added_p99=quantile([a - b for a, b in zip(mine, floor, strict=True)], 0.99),
                  reps=reps, cpu=spent)


def throughput(url: str, body: bytes, *, seconds: float, clients: int,
               headers: dict[str, str]) -> float:
    """Whole requests per second that ``clients`` threads get through ``url`` in ``seconds``."""
    done, elapsed = counted(url, body, seconds=seconds, clients=clients, headers=headers)
    return done / elapsed


def counted(url: str, body: bytes, *, seconds: float, clients: int, headers: dict[str, str],
            at_start: Callable[[], object] | None = None) -> tuple[int, float]:
    """The requests completed from the moment the window opened (``at_start()`` is called
    then), and the seconds from then until the last of them ended.

    The clients are made (and connected, by one request each) before the clock starts: making
    an ``httpx.Client`` costs milliseconds of CPU, which 16 of them would otherwise take from
    a short window."""
    pool = [httpx.Client(headers=headers, timeout=60) for _ in range(clients)]
    counts = [0] * clients
    window: list[float] = []  # the clock's start and stop, set as the clients are released

    def start() -> None:
        if at_start is not None:
            at_start()
        window.extend((time.perf_counter(), time.perf_counter() + seconds))

    ready = threading.Barrier(clients, timeout=120, action=start)
    failed: list[BaseException] = []

    def worker(slot: int) -> None:
        client = pool[slot]
        try:
            client.post(url, content=body).raise_for_status()
            ready.wait()
            while time.perf_counter() < window[1]:
                client.post(url, content=body).raise_for_status()
                counts[slot] += 1
        except BaseException as exc:  # handed to the caller below, after every thread ends
            failed.append(exc)
            ready.abort()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for client in pool:
            client.close()
    errors = [e for e in failed if not isinstance(e, threading.BrokenBarrierError)]
    if failed:
        raise (errors or failed)[0]
    return sum(counts), time.perf_counter() - window[0]
