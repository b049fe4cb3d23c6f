"""The gateway scenario's rows and their targets (issue 27), from the numbers ``gateway_rows``
measured. Owns the targets; measures nothing.

Targets: added latency p50 at 40 turns ≤ ¼ of LiteLLM's on the Chat face whole and ≤ ⅙ streamed
(issue 45), ≤ ⅓ on Messages and Responses, LiteLLM measured in the same run (else, on Chat only,
issue 15's 15 ms); gateway CPU per request at 40 turns ≤ 1.2 ms whole and ≤ 1.5 ms streamed,
and at 400 turns ≤ 10× the same face's 40-turn CPU; requests/s with 4 clients on Chat (40 turns)
≥ 2× the 257 measured when issue 27 was filed; ``serve --workers 2`` ≥ 1.6× ``--workers 1``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from benchmarks.gateway_faces import TITLES
from benchmarks.gateway_load import Paired
from benchmarks.measure import Row, at_least, at_most, ratio

SCENARIO = "gateway"
LITELLM_P50_S = 0.015  # issue 15: LiteLLM's proxy adds 15–23 ms p50 on this machine
#: (face, mode) -> added p50 ≤ LiteLLM's ÷ this (Chat: issue 45's ¼ whole, ⅙ streamed)
SHARE = {("chat", "whole"): 4, ("chat", "stream"): 6, ("messages", "whole"): 3,
         ("messages", "stream"): 3, ("responses", "whole"): 3, ("responses", "stream"): 3}
CPU_TARGET_S = {"whole": 0.0012, "stream": 0.0015}
CPU_GROWTH = 10.0
RPS_BEFORE = 257.0  # 4 clients, Chat, 40 turns, when issue 27 was filed
RPS_GAIN = 2.0
WORKERS_GAIN = 1.6
MODES = ("whole", "stream")


@dataclass
class Numbers:
    """Everything one gateway run measured."""

    #: (face, turns) -> mode -> paired latency and CPU.
    latency: dict[tuple[str, int], dict[str, Paired]] = field(default_factory=dict)
    #: (face, turns) -> clients -> requests/s through the gateway.
    rps: dict[tuple[str, int], dict[int, float]] = field(default_factory=dict)
    #: turns -> clients -> requests/s straight to the emulator.
    direct_rps: dict[int, dict[int, float]] = field(default_factory=dict)
    #: (face, turns) -> mode -> LiteLLM's paired latency and CPU; or why it is not there.
    litellm: dict[tuple[str, int], dict[str, Paired]] | str = (
        "LiteLLM not installed (pip install 'thoughtline[bench]')")
    #: face -> why LiteLLM's route for it answered with an error (the others still measured).
    litellm_failed: dict[str, str] = field(default_factory=dict)
    #: workers -> requests/s (Chat, first size, 4 clients).
    workers: dict[int, float] = field(default_factory=dict)
    #: workers -> CPU seconds per request of "gateway" (all its processes), "emulator", "clients".
    workers_cpu: dict[int, dict[str, float]] = field(default_factory=dict)
    workers_turns: int = 0


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _latency_rows(face: str, turns: int, first: bool, mode: str, m: Paired,
                  peer: Paired | None) -> list[Row]:
    title, size = TITLES[face], f"{turns} turns"
    target, ok = "", None
    floor_kind = "LiteLLM proxy's added latency (same face, same emulator)" if peer else ""
    if first:
        share = SHARE[(face, mode)]
        if peer is not None:
            limit, source = peer.added_p50 / share, "LiteLLM measured here"
        elif face == "chat":
            limit, source = LITELLM_P50_S / share, "LiteLLM's 15 ms p50 from issue 15"
        else:
            limit, source = None, "LiteLLM, not measured in this run"
        target = (f"≤ {_ms(limit)} (1/{share} of {source})" if limit is not None
                  else f"≤ 1/{share} of {source}")
        ok = at_most(m.added_p50, limit) if limit is not None else None
    note = (f"direct emulator p50 {_ms(m.direct_p50)}, via gateway {_ms(m.ours_p50)}"
            + (f"; via LiteLLM {_ms(peer.ours_p50)} (its direct {_ms(peer.direct_p50)})"
               if peer is not None else ""))
    return [
        Row(scenario=SCENARIO, case=f"{title}: added latency p50, {mode}", size=size,
            ours=m.added_p50, floor=peer.added_p50 if peer is not None else None,
            floor_kind=floor_kind,
            ratio=ratio(m.added_p50, peer.added_p50) if peer is not None else None,
            target=target, ok=ok, reps=m.reps, note=note, extra=m.to_json()),
        Row(scenario=SCENARIO, case=f"{title}: added latency p99, {mode}", size=size,
            ours=m.added_p99, floor=peer.added_p99 if peer is not None else None,
            floor_kind=floor_kind, reps=m.reps,
            note=f"direct p99 {_ms(m.direct_p99)}, via gateway {_ms(m.ours_p99)}"),
    ]


def _cpu_row(face: str, turns: int, mode: str, m: Paired, base: Paired | None,
             peer: Paired | None) -> Row:
    title = TITLES[face]
    if base is None:  # the first (40-turn) size: an absolute target
        limit = CPU_TARGET_S[mode]
        peer_cpu = peer.cpu if peer is not None else None
        return Row(scenario=SCENARIO, case=f"{title}: gateway CPU per request, {mode}",
                   size=f"{turns} turns", ours=m.cpu, floor=peer_cpu,
                   floor_kind="LiteLLM proxy's CPU per request" if peer_cpu else "",
                   ratio=ratio(m.cpu, peer_cpu), target=f"≤ {_ms(limit)}",
                   ok=at_most(m.cpu, limit), reps=m.reps,
                   note="user+system CPU of the serve process (/proc), warm-up included; "
                        "independent of how busy the machine is, wall-clock rows are not")
    growth = ratio(m.cpu, base.cpu)
    return Row(scenario=SCENARIO, case=f"{title}: gateway CPU per request, {mode}",
               size=f"{turns} turns", ours=m.cpu, floor=base.cpu,
               floor_kind="the same face's CPU per request at the first size", ratio=growth,
               target=f"≤ {CPU_GROWTH:g}× the first size", ok=at_most(growth, CPU_GROWTH),
               reps=m.reps, note="ratio = CPU here ÷ CPU at the first size"
               + (f"; LiteLLM's CPU per request here {_ms(peer.cpu)}"
                  if peer is not None and peer.cpu is not None else ""))


def _rps_rows(face: str, turns: int, first: bool, rates: dict[int, float],
              direct: dict[int, float]) -> list[Row]:
    rows = []
    for clients, rate in rates.items():
        target, ok = "", None
        if first and face == "chat" and clients == 4:
            target = f"≥ {RPS_GAIN * RPS_BEFORE:,.0f} req/s ({RPS_GAIN:g}× the {RPS_BEFORE:g} " \
                     "of issue 27)"
            ok = at_least(rate, RPS_GAIN * RPS_BEFORE)
        rows.append(Row(scenario=SCENARIO, case=f"{TITLES[face]}: requests/s, {clients} clients",
                        size=f"{turns} turns", ours=rate, floor=direct.get(clients),
                        floor_kind="emulator called directly", unit="req/s",
                        ratio=ratio(rate, direct.get(clients)), target=target, ok=ok,
                        note="whole answers, one process; each request rehydrates every "
                             "assistant turn and stores one answer"))
    return rows


def _ceiling(cpu: dict[str, float] | None, cores: int) -> str:
    """Where a request's CPU went, and the requests/s the machine's cores allow at most."""
    if not cpu:
        return ""
    total = sum(cpu.values())
    bound = f"; {cores} cores allow at most {cores / total:,.0f} req/s" if total > 0 else ""
    return ("; CPU per request: " + ", ".join(f"{k} {_ms(v)}" for k, v in cpu.items())
            + bound)


def _workers_rows(numbers: Numbers) -> list[Row]:
    one = numbers.workers.get(1)
    cores = os.cpu_count() or 1
    rows = []
    for workers, rate in numbers.workers.items():
        gain = ratio(rate, one) if workers > 1 else None
        rows.append(Row(
            scenario=SCENARIO, case=f"Chat: requests/s, serve --workers {workers}, 4 clients",
            size=f"{numbers.workers_turns} turns", ours=rate, unit="req/s",
            floor=one if workers > 1 else None,
            floor_kind="serve --workers 1" if workers > 1 else "", ratio=gain,
            target=f"≥ {WORKERS_GAIN:g}× --workers 1" if workers == 2 else "",
            ok=at_least(gain, WORKERS_GAIN) if workers == 2 else None,
            note="workers share one SQLite file (WAL); the clients, the emulator and the "
                 "workers share the machine's cores"
                 + _ceiling(numbers.workers_cpu.get(workers), cores),
            extra=numbers.workers_cpu.get(workers, {})))
    return rows


def rows(numbers: Numbers) -> list[Row]:
    peers = numbers.litellm if isinstance(numbers.litellm, dict) else {}
    sizes = sorted({turns for _, turns in numbers.latency})
    out: list[Row] = []
    for face in TITLES:
        for turns in sizes:
            measured = numbers.latency.get((face, turns))
            if measured is None:
                continue
            first = turns == sizes[0]
            for mode in MODES:
                peer = peers.get((face, turns), {}).get(mode)
                out += _latency_rows(face, turns, first, mode, measured[mode], peer)
            for mode in MODES:
                base = None if first else numbers.latency[(face, sizes[0])][mode]
                peer = peers.get((face, turns), {}).get(mode)
                out.append(_cpu_row(face, turns, mode, measured[mode], base, peer))
            out += _rps_rows(face, turns, first, numbers.rps.get((face, turns), {}),
                             numbers.direct_rps.get(turns, {}))
    out += _workers_rows(numbers)
    if isinstance(numbers.litellm, str):
        out.append(Row(scenario=SCENARIO, case="LiteLLM proxy side by side", size="—",
                       ours=None, note=numbers.litellm))
    out += [Row(scenario=SCENARIO, case=f"LiteLLM proxy side by side, {TITLES[face]}", size="—",
                ours=None, note=f"LiteLLM's route answered {why}")
            for face, why in numbers.litellm_failed.items()]
    return out


def litellm_json(numbers: Numbers) -> dict[str, Any]:
    if isinstance(numbers.litellm, str):
        return {"missing": numbers.litellm}
    return {f"{face}, {turns} turns": {mode: p.to_json() for mode, p in modes.items()}
            for (face, turns), modes in numbers.litellm.items()}
