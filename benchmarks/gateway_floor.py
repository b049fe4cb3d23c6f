"""Scenario — gateway-floor: what the gateway costs beside the floors a proxy cannot go below
(issue 45 items 5 and 6). Targets: ``gateway_floor_table``.

Per face (Chat, Messages, Responses), one conversation is grown *through the gateway* by that
face's client (``gateway_faces.grow``, the tool loop of the gateway scenario, every tool result a
5 KiB file read as a coding agent's are) to 40, 600 and 2,000 messages; at each size its next
request is sent, interleaved call by call, three ways:

- through ``thoughtline serve`` (replay, store, the upstream body built);
- through a bare pass-through proxy on the same stack (``_passthrough``: starlette + uvicorn +
  httpx, its own process; no parsing, no replay, no store), which forwards the Chat body the
  gateway sends upstream (the face's floor: ``gateway_faces.floor_request``) — every face's
  upstream here is the one DeepSeek Chat emulator, so that is the body a proxy must move;
- straight to the emulator.

Each proxy's CPU per request comes from its process (``/proc``, warm-up excluded; on a loaded
machine wall clock is mostly waiting for a core, CPU time is not), and the second floor, the
parse-plus-serialize one, is ``orjson.loads`` + ``orjson.dumps`` of the very body the gateway
received, timed by this process's CPU clock in the same run. Added latency p50 is each proxy's
p50 less the direct p50. Then ``gateway_stress``: ``/healthz`` while another tenant's large body
is priced, and many concurrent streams.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

from benchmarks import gateway_faces, gateway_procs, gateway_stress
from benchmarks.gateway_faces import FACES, Conversation, Face
from benchmarks.gateway_floor_table import FaceNumbers, Numbers, rows
from benchmarks.gateway_load import WARMUP, timed
from benchmarks.measure import Row

HEADERS = {"content-type": "application/json",
           "authorization": f"Bearer {gateway_procs.UPSTREAM_KEY}"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Sizes:
    #: (questions, repetitions) per size, ascending; 4 messages per question.
    histories: tuple[tuple[int, int], ...]
    #: what ``gateway_stress`` runs at
    stress: gateway_stress.Sizes
    #: bytes of every tool result (a file read): 5 KiB makes the Messages bodies at 40 and 600
    #: turns ~60 and ~890 KiB, the sizes issue 45 measured Claude Code's conversation at
    tool_result_bytes: int = 5 * 1024
    #: the parse-plus-serialize floor's CPU budget per size (seconds)
    parse_seconds: float = 0.3


QUICK = Sizes(histories=((1, 4), (2, 4)), tool_result_bytes=512, parse_seconds=0.02,
              stress=gateway_stress.QUICK)
FULL = Sizes(histories=((10, 200), (150, 40), (500, 8)), stress=gateway_stress.FULL)


def file_read(size: int) -> str:
    """A tool result like an agent's file read: ``size`` bytes of numbered source lines."""
    lines, total, index = [], 0, 0
    while total < size:
        line = f"{index:5d}  def handler_{index}(request):  return render(request, 'p{index}')"
        lines.append(line)
        total += len(line) + 1
        index += 1
    return "\n".join(lines)[:size]


def parse_floor(body: bytes, seconds: float) -> float:
    """Median CPU seconds of ``orjson.dumps(orjson.loads(body))`` (this thread's CPU clock)."""
    orjson.dumps(orjson.loads(body))
    times: list[float] = []
    deadline = time.thread_time() + seconds
    while len(times) < 5 or (time.thread_time() < deadline and len(times) < 500):
        start = time.thread_time()
        orjson.dumps(orjson.loads(body))
        times.append(time.thread_time() - start)
    return statistics.median(times)


@dataclass(frozen=True, kw_only=True, slots=True)
class Proxies:
    client: httpx.Client
    gateway: gateway_procs.Served
    passthrough: gateway_procs.Served
    upstream: str


def measure(p: Proxies, face: Face, conv: Conversation, reps: int,
            parse_seconds: float) -> FaceNumbers:
    """The face's next request through the gateway, through the pass-through and direct,
    interleaved ``reps`` times after a warm-up; the proxies' CPU read around the timed calls."""
    body = gateway_faces.next_request(face, conv, stream=False)
    floor_body = gateway_faces.floor_request(conv, stream=False)
    calls = ((p.gateway.url + face.path, body),
             (p.passthrough.url + "/chat/completions", floor_body),
             (p.upstream + "/chat/completions", floor_body))
    for _ in range(WARMUP):
        for url, content in calls:
            timed(p.client, url, content, False)
    pids = (p.gateway.pid, p.passthrough.pid)
    before = [gateway_procs.cpu_seconds(pid) for pid in pids]
    times: list[list[float]] = [[], [], []]
    for _ in range(reps):
        for slot, (url, content) in enumerate(calls):
            times[slot].append(timed(p.client, url, content, False))
    spent = [(gateway_procs.cpu_seconds(pid) - b) / reps for pid, b in zip(pids, before,
                                                                           strict=True)]
    ours, passed, direct = (statistics.median(t) for t in times)
    return FaceNumbers(body_bytes=len(body), gateway_cpu=spent[0], passthrough_cpu=spent[1],
                       parse_floor=parse_floor(body, parse_seconds), gateway_p50=ours,
                       passthrough_p50=passed, direct_p50=direct, reps=reps)


def face(numbers: Numbers, face: Face, home: Path, sizes: Sizes) -> None:
    """One face grown size by size through a gateway, measured at each size. Each face has
    processes of its own: the emulator records every body it receives, and one emulator behind
    all three faces held 10 GB before the third face's 2,000 turns were built."""
    with gateway_procs.emulator_process() as emu, \
            gateway_procs.gateway(emu.url, home) as served, \
            gateway_procs.passthrough(emu.url) as passing, \
            httpx.Client(headers=HEADERS, timeout=120) as client:
        proxies = Proxies(client=client, gateway=served, passthrough=passing, upstream=emu.url)
        conv = Conversation(face=face.name, tool_result=file_read(sizes.tool_result_bytes))
        for questions, reps in sizes.histories:
            asked = sum(1 for message in conv.floor if message["role"] == "user")
            gateway_faces.grow(client, served.url, face, conv, questions - asked)
            m = numbers.faces[(face.name, conv.turns())] = measure(
                proxies, face, conv, reps, sizes.parse_seconds)
            print(f"[gateway-floor: {face.name}, {conv.turns()} turns, {m.body_bytes:,} B: "
                  f"CPU gateway {m.gateway_cpu * 1e3:.2f} ms, pass-through "
                  f"{m.passthrough_cpu * 1e3:.2f} ms, parse {m.parse_floor * 1e3:.3f} ms]",
                  file=sys.stderr, flush=True)  # kept if a later size fails


def run(quick: bool) -> list[Row]:
    sizes = QUICK if quick else FULL
    numbers = Numbers()
    with tempfile.TemporaryDirectory(prefix="tl-bench-floor-") as tmp:
        home = Path(tmp)
        for each in FACES:
            face(numbers, each, home / each.name, sizes)
        numbers.healthz = gateway_stress.healthz(home / "healthz", sizes.stress)
        numbers.streams = gateway_stress.streams(home / "streams", sizes.stress)
    return rows(numbers)
