"""The gateway-floor scenario's two stress rows (issue 45 items 2 and 5): one tenant's large body
must not stall another's requests, and one process must carry many streams.

- ``healthz``: on the Messages face (an Anthropic emulator upstream), one client posts a large
  ``/v1/messages/count_tokens`` body (tens of thousands of short messages: the parsing and
  pricing work grows with the items, not the bytes) while another polls ``GET /healthz`` every
  10 ms on its own connection; the worst poll is the row.
- ``streams``: ``N`` concurrent streamed Chat requests, each a different question, first
  straight to a Chat emulator that pauses before every chunk (``--chunk-delay``), then through
  one gateway process in front of it, from one asyncio client process (``httpx.AsyncClient``).
  Per stream the text frames (reasoning, content or tool-call fragments) and their arrival
  times are kept: a frame lost is one the direct stream had and the gateway's did not; the gap
  p99 is over every pair of consecutive text frames of every stream.

Both rows note the gateway process's CPU and the machine's load. What profiling them showed
(per-thread CPU and run-queue wait from ``/proc/<pid>/task/*/schedstat``, ``gc.callbacks`` and
py-spy in the served process; issue 45):

- ``healthz``: each slow poll was the loop thread waiting for the interpreter lock while the
  worker held it through a full garbage collection (the heap the 8 MB body builds), or, on a
  loaded machine, while the worker waited for a core holding it. Not the switch interval: at
  0.5 ms the worst poll stayed the same. Hence ``gateway.offload``'s paused collector.
- ``streams``: on the shared machine the gateway's loop thread spends 75-90% of the run
  runnable but not running (Linux's autogroup scheduling gives each session an equal share of
  the cores, so the helpers' other sessions take most of them). Given its share (the run's
  session reniced), the added p99 was -8, 28 and 34 ms in three runs, the direct streams' own
  p99 moving by 19 ms between runs; what delays frames then is the setup of 512 requests at
  once (loop stalls of 100-470 ms, before most first frames) and collections over the streams'
  objects (35-38 ms passes as the first frames flow, one of 186 ms). Its CPU goes to relaying
  frames (~40%), httpcore's pool scanning every connection on each request's start and end
  (~15%), request setup (~7%).
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson

from benchmarks import gateway_procs
from benchmarks.gateway_faces import MODEL, UPSTREAM_MODEL
from benchmarks.gateway_floor_table import Healthz, Streams
from benchmarks.gateway_load import quantile

HEADERS = {"content-type": "application/json",
           "authorization": f"Bearer {gateway_procs.UPSTREAM_KEY}"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Sizes:
    healthz_bytes: int
    healthz_messages: int
    healthz_posts: int
    streams: int
    chunk_delay: float


QUICK = Sizes(healthz_bytes=1 << 20, healthz_messages=5_000, healthz_posts=1, streams=8,
              chunk_delay=0.02)
FULL = Sizes(healthz_bytes=8 << 20, healthz_messages=40_000, healthz_posts=3, streams=512,
             chunk_delay=0.5)


# --- /healthz while a large body is priced --------------------------------------------------------


def count_tokens_body(size: int, messages: int) -> bytes:
    """About ``size`` bytes: ``messages`` alternating user and assistant text messages."""
    text = "x" * max(1, size // messages - 45)
    history = [{"role": ("user", "assistant")[i % 2], "content": f"{i} {text}"}
               for i in range(messages - 1 + messages % 2)]  # ends with a user message
    return orjson.dumps({"model": "an/claude-sonnet-4-5", "max_tokens": 20000,
                         "messages": history})


def _poll(url: str, stop: threading.Event, out: list[float]) -> None:
    with httpx.Client(timeout=30) as client:
        while not stop.is_set():
            start = time.perf_counter()
            client.get(url).raise_for_status()
            out.append(time.perf_counter() - start)
            time.sleep(0.010)


def healthz(home: Path, sizes: Sizes) -> Healthz:
    body = count_tokens_body(sizes.healthz_bytes, sizes.healthz_messages)
    with gateway_procs.emulator_process("anthropic", "--no-auth") as emu, \
            gateway_procs.gateway(emu.url, home, provider="anthropic", name="an") as served, \
            httpx.Client(headers=HEADERS, timeout=300) as client:
        probe = served.url.removesuffix("/v1") + "/healthz"
        url = served.url + "/messages/count_tokens"
        client.get(probe).raise_for_status()
        small = count_tokens_body(4096, 4)
        client.post(url, content=small).raise_for_status()  # warm: imports, route tables
        polls: list[float] = []
        slowest, tokens = 0.0, 0
        cpu = gateway_procs.cpu_seconds(served.pid)
        for _ in range(sizes.healthz_posts):
            stop = threading.Event()
            poller = threading.Thread(target=_poll, args=(probe, stop, polls))
            poller.start()
            time.sleep(0.05)
            start = time.perf_counter()
            answer = client.post(url, content=body)
            slowest = max(slowest, time.perf_counter() - start)
            time.sleep(0.05)
            stop.set()
            poller.join()
            answer.raise_for_status()
            tokens = int(answer.json()["input_tokens"])
        cpu = gateway_procs.cpu_seconds(served.pid) - cpu
    return Healthz(body_bytes=len(body), polls=len(polls), worst=max(polls),
                   p50=statistics.median(polls), priced=slowest, tokens=tokens,
                   posts=sizes.healthz_posts, gateway_cpu=cpu, load=os.getloadavg()[0])


# --- many concurrent streams ----------------------------------------------------------------------


@dataclass
class Stream:
    """What one client got of one stream: its text frames, when each arrived, how it ended."""

    text: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    done: bool = False
    error: str = ""


def fragments(data: bytes) -> str:
    """The text a Chat chunk carries (reasoning, content, tool-call arguments), "" if none."""
    chunk = orjson.loads(data)
    out = []
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        out += [delta.get("reasoning_content") or "", delta.get("content") or ""]
        out += [(c.get("function") or {}).get("arguments") or ""
                for c in delta.get("tool_calls") or ()]
    return "".join(out)


async def _one(client: httpx.AsyncClient, url: str, body: bytes, open_now: list[int]) -> Stream:
    got = Stream()
    try:
        async with client.stream("POST", url, content=body) as response:
            response.raise_for_status()
            open_now[0] += 1
            open_now[1] = max(open_now[1], open_now[0])
            try:
                async for line in response.aiter_lines():
                    if line == "data: [DONE]":
                        got.done = True
                    elif line.startswith("data: "):
                        text = fragments(line[6:].encode())
                        if text:
                            got.text.append(text)
                            got.times.append(time.perf_counter())
            finally:
                open_now[0] -= 1
    except httpx.HTTPError as exc:
        got.error = repr(exc)[:200]
    return got


def _bodies(model: str, n: int) -> list[bytes]:
    return [orjson.dumps({"model": model, "stream": True,
                          "messages": [{"role": "user", "content": f"Stream {i}: go on."}]})
            for i in range(n)]


async def _all(url: str, bodies: list[bytes]) -> tuple[list[Stream], int]:
    limits = httpx.Limits(max_connections=len(bodies) + 8,
                          max_keepalive_connections=len(bodies) + 8)
    open_now = [0, 0]  # open right now, most open at once
    async with httpx.AsyncClient(headers=HEADERS, limits=limits,
                                 timeout=httpx.Timeout(300, pool=300)) as client:
        got = await asyncio.gather(*(_one(client, url, b, open_now) for b in bodies))
    return list(got), open_now[1]


def raise_nofile(streams: int) -> str:
    """Raise this process's open-file limit (inherited by the processes it starts) to what the
    streams need: a socket per stream here, two in the gateway (client and upstream)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4 * streams + 256
    if soft >= want or (hard != resource.RLIM_INFINITY and hard <= soft):
        return f"{soft} (not raised; hard {hard})"
    new = want if hard == resource.RLIM_INFINITY else min(want, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    return f"raised {soft} → {new} (hard {hard})"


def tally(direct: list[Stream], via: list[Stream]) -> tuple[int, int, int]:
    """Text frames the emulator sent, how many of them each gateway stream lacks (summed), and
    the gateway streams that errored, never ended or carry other text than their direct twin."""
    expected = sum(len(d.text) for d in direct)
    lost = sum(max(0, len(d.text) - len(v.text)) for d, v in zip(direct, via, strict=True))
    bad = sum(1 for d, v in zip(direct, via, strict=True)
              if v.error or not v.done or "".join(v.text) != "".join(d.text))
    return expected, lost, bad


def _gaps(streams: list[Stream]) -> list[float]:
    return [b - a for s in streams for a, b in zip(s.times, s.times[1:], strict=False)]


def streams(home: Path, sizes: Sizes) -> Streams:
    nofile = raise_nofile(sizes.streams)
    with gateway_procs.emulator_process("deepseek", "--chunk-delay",
                                        str(sizes.chunk_delay)) as emu, \
            gateway_procs.gateway(emu.url, home,
                                  upstream_extra=f"max_connections = {sizes.streams + 64}\n",
                                  ) as served:
        asyncio.run(_all(served.url + "/chat/completions", _bodies(MODEL, 2)))
        direct, _ = asyncio.run(_all(emu.url + "/chat/completions",
                                     _bodies(UPSTREAM_MODEL, sizes.streams)))
        cpu = gateway_procs.cpu_seconds(served.pid)
        via, peak = asyncio.run(_all(served.url + "/chat/completions",
                                     _bodies(MODEL, sizes.streams)))
        cpu = gateway_procs.cpu_seconds(served.pid) - cpu
    if any(d.error or not d.done for d in direct):
        raise RuntimeError("the emulator's own streams did not finish: "
                           + next(d.error for d in direct if d.error or not d.done))
    expected, lost, bad = tally(direct, via)
    ours, floor = _gaps(via), _gaps(direct)
    return Streams(streams=sizes.streams, peak_open=peak, frames_expected=expected,
                   frames_lost=lost, bad_streams=bad, gap_p99=quantile(ours, 0.99),
                   direct_gap_p99=quantile(floor, 0.99), gap_p50=statistics.median(ours),
                   direct_gap_p50=statistics.median(floor), chunk_delay=sizes.chunk_delay,
                   nofile=nofile, gateway_cpu=cpu, load=os.getloadavg()[0])
