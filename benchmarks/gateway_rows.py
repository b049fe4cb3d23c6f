"""Scenario — gateway: what ``thoughtline serve`` adds to a request on each face, and how many
it serves; LiteLLM's proxy beside it.

A DeepSeek-personality emulator and a real ``thoughtline serve`` run as their own processes
(``gateway_procs``). For each face — Chat ``/v1/chat/completions``, Messages ``/v1/messages``,
Responses ``/v1/responses`` — a tool-loop history of 40 and of 400 messages (10 and 100
questions: user, assistant tool call, tool result, assistant answer) is first built *through
the gateway* by that face's client (``gateway_faces``), so every measured request makes the
gateway find and rehydrate every assistant turn's reasoning, store the answer with its index rows
and encode the history for the upstream.

Per face and size (``gateway_load``): added latency p50 and p99, whole and streamed, against the
same next request sent straight to the emulator (its Chat body with the reasoning put back, as
the gateway sends it), interleaved call by call; the serve process's CPU per request (``/proc``:
on a shared, overloaded machine wall-clock latency is mostly waiting for a CPU, CPU time is not);
requests per second with 4 and 16 clients, beside the emulator called directly. Then requests
per second of ``serve --workers 1, 2, 4`` (Chat, 40 turns, 4 clients), each with where its
requests' CPU went (gateway processes, emulator, clients). LiteLLM's proxy is timed
the same way on its three routes at both sizes, in front of the same emulator, when
``pip install 'thoughtline[bench]'`` installed it (not in ``--quick``: it takes ~1 min to
start). Targets: ``gateway_table``.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from benchmarks import gateway_faces, gateway_procs, gateway_table
from benchmarks.gateway_faces import FACES, Conversation, Face
from benchmarks.gateway_load import Call, Paired, counted, paired, throughput
from benchmarks.measure import Row

SCENARIO = gateway_table.SCENARIO
QUESTIONS = 10  # x 4 messages = the 40-turn history
KEY_ENV = gateway_procs.KEY_ENV
HEADERS = {"content-type": "application/json",
           "authorization": f"Bearer {gateway_procs.UPSTREAM_KEY}"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Sizes:
    #: (questions, latency repetitions) per history size; 4 messages per question.
    histories: tuple[tuple[int, int], ...]
    rps_seconds: float
    clients: tuple[int, ...] = (4, 16)
    workers: tuple[int, ...] = (1, 2, 4)
    #: LiteLLM's latency repetitions per history size (fewer than ours: what it adds is several
    #: times larger, and its run is the longest part of the scenario); () = not started.
    litellm_reps: tuple[int, ...] = (60, 15)


#: A smoke run: tiny histories, one client count, two workers only (no 1 → 2 ratio), no LiteLLM.
QUICK = Sizes(histories=((1, 3), (3, 3)), rps_seconds=0.2, clients=(4,), workers=(2,),
              litellm_reps=())
FULL = Sizes(histories=((QUESTIONS, 120), (100, 25)), rps_seconds=2.0)


# --- the single-face helpers other scenarios and tests use (Chat face, 40 turns) -----------------

_emulator = gateway_procs.emulator


def build_history(client: httpx.Client, gateway: str) -> tuple[list[Any], list[Any]]:
    """Run the Chat tool loop through the gateway: (stripped history, history with reasoning)."""
    conv = gateway_faces.build(client, gateway, gateway_faces.BY_NAME["chat"], QUESTIONS)
    return conv.client, conv.floor


def _body(history: list[Any], *, stream: bool, model: str) -> bytes:
    conv = Conversation(face="chat", client=list(history))
    return gateway_faces.next_request(gateway_faces.BY_NAME["chat"], conv, stream=stream,
                                      model=model)


# --- measuring -----------------------------------------------------------------------------------


def _latency(client: httpx.Client, base: str, pid: int, upstream: str, face: Face,
             conv: Conversation, reps: int, model: str = gateway_faces.MODEL,
             ) -> dict[str, Paired]:
    """Whole and streamed: the face's next request through the proxy at ``base`` (process
    ``pid``) beside its floor sent straight to the emulator."""
    out = {}
    for mode in gateway_table.MODES:
        stream = mode == "stream"
        ours = Call(client=client, url=base + face.path,
                    body=gateway_faces.next_request(face, conv, stream=stream, model=model))
        direct = Call(client=client, url=upstream + "/chat/completions",
                      body=gateway_faces.floor_request(conv, stream=stream))
        out[mode] = paired(ours, direct, stream=stream, reps=reps,
                           cpu=lambda: gateway_procs.cpu_seconds(pid))
    return out


def _faces(numbers: gateway_table.Numbers, upstream: str, home: Path,
           sizes: Sizes) -> dict[int, dict[str, Conversation]]:
    """Every face at every size through one gateway; returns the conversations by size."""
    built: dict[int, dict[str, Conversation]] = {}
    with gateway_procs.gateway(upstream, home) as served, \
            httpx.Client(headers=HEADERS, timeout=60) as client:
        for questions, reps in sizes.histories:
            turns = 4 * questions
            convs = built[turns] = {face.name: gateway_faces.build(client, served.url, face,
                                                                   questions)
                                    for face in FACES}
            for face in FACES:
                conv = convs[face.name]
                numbers.latency[(face.name, turns)] = _latency(client, served.url, served.pid,
                                                               upstream, face, conv, reps)
                body = gateway_faces.next_request(face, conv, stream=False)
                numbers.rps[(face.name, turns)] = {
                    n: throughput(served.url + face.path, body, seconds=sizes.rps_seconds,
                                  clients=n, headers=HEADERS) for n in sizes.clients}
            floor = gateway_faces.floor_request(convs["chat"], stream=False)
            numbers.direct_rps[turns] = {
                n: throughput(upstream + "/chat/completions", floor, seconds=sizes.rps_seconds,
                              clients=n, headers=HEADERS) for n in sizes.clients}
    return built


def _workers(numbers: gateway_table.Numbers, emu: gateway_procs.Emulator, home: Path,
             sizes: Sizes) -> None:
    """Requests/s of ``serve --workers N``, and where each request's CPU went (every gateway
    process, the emulator, this process's clients): what the machine's cores give at most."""
    questions = sizes.histories[0][0]
    numbers.workers_turns = 4 * questions
    for workers in sizes.workers:
        numbers.workers[workers], numbers.workers_cpu[workers] = _workers_once(
            emu, home / f"workers{workers}", workers, questions, sizes.rps_seconds)


def _workers_once(emu: gateway_procs.Emulator, home: Path, workers: int, questions: int,
                  seconds: float) -> tuple[float, dict[str, float]]:
    chat = gateway_faces.BY_NAME["chat"]
    with gateway_procs.gateway(emu.url, home, workers=workers) as served, \
            httpx.Client(headers=HEADERS, timeout=60) as client:
        conv = gateway_faces.build(client, served.url, chat, questions)
        body = gateway_faces.next_request(chat, conv, stream=False)
        throughput(served.url + chat.path, body, seconds=0.2, clients=4, headers=HEADERS)

        def cpu() -> tuple[float, float, float]:
            return (gateway_procs.tree_cpu_seconds(served.pid),
                    gateway_procs.cpu_seconds(emu.pid), time.process_time())

        before: list[tuple[float, float, float]] = []
        done, elapsed = counted(served.url + chat.path, body, seconds=seconds, clients=4,
                                headers=HEADERS, at_start=lambda: before.append(cpu()))
        after = cpu()
    spent = {name: (b - a) / max(done, 1) for name, a, b in
             zip(("gateway", "emulator", "clients"), before[0], after, strict=True)}
    return done / elapsed, spent


def _litellm(numbers: gateway_table.Numbers, upstream: str, home: Path,
             built: dict[int, dict[str, Conversation]], sizes: Sizes) -> None:
    """LiteLLM's three routes timed like ours at every size, each face's client history sent
    to it as the client sends it to us (Chat: with its reasoning, which LiteLLM does not put
    back itself)."""
    binary = gateway_procs.litellm_binary()
    if binary is None:
        return
    try:
        with gateway_procs.litellm(binary, upstream, home) as proxy, \
                httpx.Client(headers={**HEADERS, "authorization": f"Bearer {proxy.key}"},
                             timeout=60) as client:
            measured: dict[tuple[str, int], dict[str, Paired]] = {}
            numbers.litellm = measured
            for (questions, _), reps in zip(sizes.histories, sizes.litellm_reps, strict=True):
                for face in FACES:
                    if face.name in numbers.litellm_failed:
                        continue
                    conv = built[4 * questions][face.name]
                    if face.name == "chat":
                        conv = Conversation(face="chat", client=conv.floor, floor=conv.floor)
                    model = gateway_procs.LITELLM_MODELS[face.name][0]
                    try:  # one route LiteLLM cannot serve leaves the others measured
                        measured[(face.name, 4 * questions)] = _latency(
                            client, proxy.url, proxy.pid, upstream, face, conv, reps, model)
                    except httpx.HTTPStatusError as exc:
                        numbers.litellm_failed[face.name] = (
                            f"{exc.response.status_code} {exc.response.text[:160]}")
    except (RuntimeError, httpx.HTTPError) as exc:
        numbers.litellm = f"LiteLLM installed but not measured: {exc}"[:300]


def run(quick: bool) -> list[Row]:
    sizes = QUICK if quick else FULL
    numbers = gateway_table.Numbers()
    with tempfile.TemporaryDirectory(prefix="tl-bench-gateway-") as tmp, \
            gateway_procs.emulator_process() as emu:
        home, upstream = Path(tmp), emu.url
        built = _faces(numbers, upstream, home / "gateway", sizes)
        _workers(numbers, emu, home, sizes)
        if not sizes.litellm_reps:
            numbers.litellm = "LiteLLM's proxy is not started in --quick (~1 min to start)"
        else:
            _litellm(numbers, upstream, home, built, sizes)
    rows = gateway_table.rows(numbers)
    if rows:
        rows[0].extra = {**rows[0].extra, "litellm": gateway_table.litellm_json(numbers)}
    return rows

