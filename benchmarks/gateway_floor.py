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
- through LiteLLM's proxy, when it is installed (``gateway_procs.litellm_binary``; not in
  ``--quick``: it takes about a minute to start), which gets the face's client body as the
  gateway does (Chat: with the reasoning kept, which LiteLLM does not put back);
- straight to the emulator.

One emulator (``benchmarks._emulator``, which keeps no record of what it received), one
pass-through and one LiteLLM proxy serve every face; each face has a gateway of its own.
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
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

from benchmarks import gateway_faces, gateway_procs, gateway_stress
from benchmarks.gateway_faces import FACES, Conversation, Face
from benchmarks.gateway_floor_table import LITELLM_MISSING, FaceNumbers, Numbers, Peer, rows
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
    #: start LiteLLM's proxy beside the pass-through when it is installed
    litellm: bool = True


QUICK = Sizes(histories=((1, 4), (2, 4)), tool_result_bytes=512, parse_seconds=0.02,
              stress=gateway_stress.QUICK, litellm=False)
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
class Litellm:
    """LiteLLM's running proxy and a client sending its master key."""

    proxy: gateway_procs.Proxy
    client: httpx.Client


@dataclass(frozen=True, kw_only=True, slots=True)
class Proxies:
    client: httpx.Client
    passthrough: gateway_procs.Served
    upstream: str
    litellm: Litellm | None


Timed = tuple[httpx.Client, str, bytes]  # who sends, where, what


def _litellm_call(p: Proxies, face: Face, conv: Conversation,
                  failed: dict[str, str]) -> Timed | None:
    """LiteLLM's call for this face, once it has answered it; None when it is not running or
    its route cannot serve the face (what it answered goes to ``failed``)."""
    if p.litellm is None or face.name in failed:
        return None
    if face.name == "chat":  # LiteLLM does not put reasoning back: the client keeps it
        conv = Conversation(face="chat", client=conv.floor, floor=conv.floor)
    body = gateway_faces.next_request(face, conv, stream=False,
                                      model=gateway_procs.LITELLM_MODELS[face.name][0])
    url = p.litellm.proxy.url + face.path
    answer = p.litellm.client.post(url, content=body)
    if answer.is_error:
        failed[face.name] = f"{answer.status_code} {answer.text[:160]}"
        return None
    return p.litellm.client, url, body


def measure(p: Proxies, gateway: gateway_procs.Served, face: Face, conv: Conversation,
            reps: int, parse_seconds: float, failed: dict[str, str]) -> FaceNumbers:
    """The face's next request through the gateway, the pass-through, LiteLLM (when running)
    and direct, interleaved ``reps`` times after a warm-up; each proxy's CPU read around the
    timed calls."""
    body = gateway_faces.next_request(face, conv, stream=False)
    floor_body = gateway_faces.floor_request(conv, stream=False)
    peer = _litellm_call(p, face, conv, failed)
    calls: list[Timed] = [(p.client, gateway.url + face.path, body),
                          (p.client, p.passthrough.url + "/chat/completions", floor_body),
                          (p.client, p.upstream + "/chat/completions", floor_body)]
    pids = [gateway.pid, p.passthrough.pid]
    if peer is not None and p.litellm is not None:
        calls.append(peer)
        pids.append(p.litellm.proxy.pid)
    for _ in range(WARMUP):
        for client, url, content in calls:
            timed(client, url, content, False)
    before = [gateway_procs.cpu_seconds(pid) for pid in pids]
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(reps):
        for slot, (client, url, content) in enumerate(calls):
            times[slot].append(timed(client, url, content, False))
    spent = [(gateway_procs.cpu_seconds(pid) - b) / reps
             for pid, b in zip(pids, before, strict=True)]
    p50 = [statistics.median(t) for t in times]
    return FaceNumbers(body_bytes=len(body), gateway_cpu=spent[0], passthrough_cpu=spent[1],
                       parse_floor=parse_floor(body, parse_seconds), gateway_p50=p50[0],
                       passthrough_p50=p50[1], direct_p50=p50[2], reps=reps,
                       litellm=Peer(cpu=spent[2], p50=p50[3], body_bytes=len(peer[2]))
                       if peer is not None else None)


def face(numbers: Numbers, proxies: Proxies, face: Face, home: Path, sizes: Sizes) -> None:
    """One face grown size by size through a gateway of its own, measured at each size."""
    with gateway_procs.gateway(proxies.upstream, home) as served:
        conv = Conversation(face=face.name, tool_result=file_read(sizes.tool_result_bytes))
        for questions, reps in sizes.histories:
            asked = sum(1 for message in conv.floor if message["role"] == "user")
            gateway_faces.grow(proxies.client, served.url, face, conv, questions - asked)
            m = numbers.faces[(face.name, conv.turns())] = measure(
                proxies, served, face, conv, reps, sizes.parse_seconds, numbers.litellm_failed)
            peer = (f", LiteLLM {m.litellm.cpu * 1e3:.2f} ms" if m.litellm is not None
                    else "")
            print(f"[gateway-floor: {face.name}, {conv.turns()} turns, {m.body_bytes:,} B: "
                  f"CPU gateway {m.gateway_cpu * 1e3:.2f} ms, pass-through "
                  f"{m.passthrough_cpu * 1e3:.2f} ms{peer}, parse "
                  f"{m.parse_floor * 1e3:.3f} ms]",
                  file=sys.stderr, flush=True)  # kept if a later size fails


@contextmanager
def litellm(numbers: Numbers, upstream: str, home: Path, sizes: Sizes,
            ) -> Iterator[Litellm | None]:
    """LiteLLM's proxy in front of ``upstream`` when it is installed and asked for; else None,
    and ``numbers`` says why its rows are not in the table."""
    binary = gateway_procs.litellm_binary()
    if not sizes.litellm:
        numbers.litellm_missing = "LiteLLM's proxy is not started in --quick (~1 min to start)"
    elif binary is None:
        numbers.litellm_missing = LITELLM_MISSING
    if not sizes.litellm or binary is None:
        yield None
        return
    home.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        try:
            proxy = stack.enter_context(gateway_procs.litellm(binary, upstream, home))
        except RuntimeError as exc:
            numbers.litellm_missing = f"LiteLLM installed but not started: {exc}"[:300]
            yield None
            return
        numbers.litellm_missing, numbers.litellm_version = "", gateway_procs.litellm_version(
            binary)
        client = stack.enter_context(httpx.Client(
            headers={**HEADERS, "authorization": f"Bearer {proxy.key}"}, timeout=300))
        yield Litellm(proxy=proxy, client=client)


def run(quick: bool) -> list[Row]:
    sizes = QUICK if quick else FULL
    numbers = Numbers()
    with tempfile.TemporaryDirectory(prefix="tl-bench-floor-") as tmp:
        home = Path(tmp)
        with gateway_procs.emulator_process() as emu, \
                gateway_procs.passthrough(emu.url) as passing, \
                litellm(numbers, emu.url, home / "litellm", sizes) as peer, \
                httpx.Client(headers=HEADERS, timeout=300) as client:
            proxies = Proxies(client=client, passthrough=passing, upstream=emu.url,
                              litellm=peer)
            for each in FACES:
                face(numbers, proxies, each, home / each.name, sizes)
        numbers.healthz = gateway_stress.healthz(home / "healthz", sizes.stress)
        numbers.streams = gateway_stress.streams(home / "streams", sizes.stress)
    return rows(numbers)
