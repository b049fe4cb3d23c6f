"""The gateway-floor scenario's rows and their targets (issue 45 items 5 and 6), from the numbers
``gateway_floor`` and ``gateway_stress`` measured. Owns the targets; measures nothing.

Targets (issue 45): the next request of a 600-turn conversation costs the gateway ≤ 4× the CPU of
parsing and serializing its body (``orjson``), of a 40-turn one ≤ 20×; the gateway's CPU at 40
turns ≤ 1.5× a bare pass-through proxy's on the same stack; ``/healthz`` answers within 100 ms
while another tenant's 8 MB body is priced; one gateway process carries ≥ 512 concurrent SSE
streams with no frame lost and an added inter-frame gap p99 ≤ 5 ms. The sizes are matched to
the targets by position (first size: the 40-turn targets, second: the 600-turn one), so the
``--quick`` run's tiny sizes are checked against the same limits. LiteLLM's proxy, when it
runs, sits beside each face and size with no target of its own here: the ¼ and ⅙ of its added
p50 are the gateway scenario's (a rehydrated 40-turn Chat history, ``gateway_table``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from benchmarks.gateway_faces import TITLES
from benchmarks.measure import Row, at_least, at_most, ratio

SCENARIO = "gateway-floor"
#: The parse-plus-serialize target by size position: 40 turns ≤ 20×, 600 turns ≤ 4×.
PARSE_LIMITS = (20.0, 4.0)
PASSTHROUGH_LIMIT = 1.5  # at the first size
HEALTHZ_LIMIT_S = 0.100
GAP_LIMIT_S = 0.005
LITELLM_MISSING = ("LiteLLM not installed, rows skipped in the table (pip install "
                   "'litellm[proxy]' into a venv of its own and set TL_BENCH_LITELLM to its "
                   "litellm command, or pip install 'thoughtline[bench]')")


@dataclass(frozen=True, kw_only=True, slots=True)
class Peer:
    """LiteLLM's proxy on the same face and size: its CPU seconds per request (``/proc``) and
    its p50 (seconds), timed in the same interleaving as the gateway and the pass-through."""

    cpu: float
    p50: float
    body_bytes: int


@dataclass(frozen=True, kw_only=True, slots=True)
class FaceNumbers:
    """One face at one size: CPU seconds per request of the gateway and the pass-through
    process, the in-process parse-plus-serialize floor, and p50 latencies (seconds)."""

    body_bytes: int
    gateway_cpu: float
    passthrough_cpu: float
    parse_floor: float
    gateway_p50: float
    passthrough_p50: float
    direct_p50: float
    reps: int
    litellm: Peer | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Healthz:
    body_bytes: int
    polls: int
    worst: float
    p50: float
    priced: float  # wall seconds of the slowest count_tokens request
    tokens: int
    posts: int = 1
    gateway_cpu: float = 0.0  # CPU seconds of the gateway process over all the posts
    load: float = 0.0  # the machine's 1-minute load average after them


@dataclass(frozen=True, kw_only=True, slots=True)
class Streams:
    streams: int
    peak_open: int
    frames_expected: int
    frames_lost: int
    bad_streams: int  # ended without [DONE], errored, or text differing from the direct stream
    gap_p99: float
    direct_gap_p99: float
    gap_p50: float
    direct_gap_p50: float
    chunk_delay: float
    gateway_cpu: float = 0.0  # CPU seconds of the gateway process over the streams
    load: float = 0.0  # the machine's 1-minute load average after them
    nofile: str


@dataclass
class Numbers:
    #: (face, turns) -> what the gateway and its floors cost.
    faces: dict[tuple[str, int], FaceNumbers] = field(default_factory=dict)
    healthz: Healthz | None = None
    streams: Streams | None = None
    #: why LiteLLM's rows are not in the table (a row note); "" when it ran or was not asked
    litellm_missing: str = ""
    #: face -> what LiteLLM's route answered when it could not serve that face
    litellm_failed: dict[str, str] = field(default_factory=dict)
    litellm_version: str = ""


def _load(load: float) -> str:
    """The machine's load beside a stress row: on a shared machine the row measures it too (a
    gateway thread waiting for a core, not working, is most of a loaded run's gap)."""
    return f"1-min load {load:.1f} on {os.cpu_count()} cores"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _face_rows(face: str, turns: int, position: int, m: FaceNumbers) -> list[Row]:
    title, size = TITLES[face], f"{turns} turns"
    parse_limit = PARSE_LIMITS[position] if position < len(PARSE_LIMITS) else None
    by_parse = ratio(m.gateway_cpu, m.parse_floor)
    by_pass = ratio(m.gateway_cpu, m.passthrough_cpu)
    added, pass_added = m.gateway_p50 - m.direct_p50, m.passthrough_p50 - m.direct_p50
    body = f"body {m.body_bytes / 1024:,.0f} KiB"
    return [
        Row(scenario=SCENARIO, case=f"{title}: gateway CPU per next request ÷ parse+serialize",
            size=size, ours=m.gateway_cpu, floor=m.parse_floor,
            floor_kind="orjson.loads + orjson.dumps of the same body (CPU, this process)",
            ratio=by_parse, target=f"≤ {parse_limit:g}× floor" if parse_limit else "",
            ok=at_most(by_parse, parse_limit) if parse_limit else None, reps=m.reps,
            note=f"{body}; gateway CPU from /proc (user+system, warm-up excluded)"),
        Row(scenario=SCENARIO, case=f"{title}: gateway CPU per next request ÷ pass-through",
            size=size, ours=m.gateway_cpu, floor=m.passthrough_cpu,
            floor_kind="bare pass-through proxy's CPU (starlette+uvicorn+httpx, /proc)",
            ratio=by_pass,
            target=f"≤ {PASSTHROUGH_LIMIT:g}× floor" if position == 0 else "",
            ok=at_most(by_pass, PASSTHROUGH_LIMIT) if position == 0 else None, reps=m.reps,
            note=f"{body}; the pass-through forwards the Chat body the gateway sends upstream "
                 "(reasoning put back) to the same emulator"),
        Row(scenario=SCENARIO, case=f"{title}: added latency p50 vs pass-through", size=size,
            ours=added, floor=pass_added, floor_kind="pass-through proxy's added p50",
            ratio=ratio(added, pass_added), reps=m.reps,
            note=f"p50 via gateway {_ms(m.gateway_p50)}, via pass-through "
                 f"{_ms(m.passthrough_p50)}, direct {_ms(m.direct_p50)} (interleaved)"),
    ]


def _litellm_rows(face: str, turns: int, m: FaceNumbers, peer: Peer, version: str,
                  ) -> list[Row]:
    """Ours beside LiteLLM's proxy, LiteLLM's own distance from the pass-through floor noted."""
    title, size = TITLES[face], f"{turns} turns"
    added, peer_added = m.gateway_p50 - m.direct_p50, peer.p50 - m.direct_p50
    pass_added = m.passthrough_p50 - m.direct_p50
    cpu_floor, lat_floor = ratio(peer.cpu, m.passthrough_cpu), ratio(peer_added, pass_added)
    sent = f"LiteLLM {version} got the client's body ({peer.body_bytes / 1024:,.0f} KiB)"
    return [
        Row(scenario=SCENARIO, case=f"{title}: gateway CPU per next request ÷ LiteLLM proxy's",
            size=size, ours=m.gateway_cpu, floor=peer.cpu,
            floor_kind="LiteLLM proxy's CPU (same face, same emulator, /proc)",
            ratio=ratio(m.gateway_cpu, peer.cpu), reps=m.reps,
            note=f"LiteLLM ÷ pass-through {_times(cpu_floor)} (gateway ÷ pass-through "
                 f"{_times(ratio(m.gateway_cpu, m.passthrough_cpu))}); {sent}"),
        Row(scenario=SCENARIO, case=f"{title}: added latency p50 vs LiteLLM proxy", size=size,
            ours=added, floor=peer_added, floor_kind="LiteLLM proxy's added p50",
            ratio=ratio(added, peer_added), reps=m.reps,
            note=f"p50 via LiteLLM {_ms(peer.p50)}; LiteLLM's added ÷ pass-through's "
                 f"{_times(lat_floor)} (interleaved with the rows above)"),
    ]


def _times(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _litellm_notes(numbers: Numbers) -> list[Row]:
    notes = [Row(scenario=SCENARIO, case=f"LiteLLM proxy beside the floor, {TITLES[face]}",
                 size="—", ours=None, note=f"LiteLLM's route answered {why}")
             for face, why in numbers.litellm_failed.items()]
    if numbers.litellm_missing:
        notes.append(Row(scenario=SCENARIO, case="LiteLLM proxy beside the floor", size="—",
                         ours=None, note=numbers.litellm_missing))
    return notes


def _healthz_rows(h: Healthz) -> list[Row]:
    return [Row(scenario=SCENARIO,
                case="/healthz worst latency while another tenant's large body is priced",
                size=f"{h.body_bytes / 2**20:.1f} MiB count_tokens", ours=h.worst,
                target=f"≤ {_ms(HEALTHZ_LIMIT_S)}", ok=at_most(h.worst, HEALTHZ_LIMIT_S),
                reps=h.polls,
                note=f"GET /healthz every 10 ms from another connection; p50 {_ms(h.p50)}; "
                     f"slowest POST /v1/messages/count_tokens {_ms(h.priced)} "
                     f"({h.tokens:,} tokens); gateway CPU {h.gateway_cpu:.2f} s for "
                     f"{h.posts} posts; {_load(h.load)}")]


def _stream_rows(s: Streams) -> list[Row]:
    size = f"{s.streams} streams"
    added = s.gap_p99 - s.direct_gap_p99
    lost = s.frames_lost + s.bad_streams
    setting = (f"emulator --chunk-delay {s.chunk_delay * 1e3:g} ms; one asyncio httpx client "
               f"process; RLIMIT_NOFILE {s.nofile}")
    return [
        Row(scenario=SCENARIO, case="Chat streams: concurrently open in one gateway process",
            size=size, ours=float(s.peak_open), unit="streams", target=f"≥ {s.streams}",
            ok=at_least(float(s.peak_open), float(s.streams)), note=setting),
        Row(scenario=SCENARIO, case="Chat streams: frames lost", size=size, ours=float(lost),
            floor=float(s.frames_expected), floor_kind="text frames the emulator sent",
            unit="frames", target="= 0", ok=lost == 0,
            note=f"{s.bad_streams} streams unfinished or with text unlike the direct stream's"),
        Row(scenario=SCENARIO, case="Chat streams: added inter-frame gap p99", size=size,
            ours=added, floor=s.direct_gap_p99,
            floor_kind="gap p99 of the same streams straight from the emulator",
            target=f"≤ {_ms(GAP_LIMIT_S)}", ok=at_most(added, GAP_LIMIT_S),
            note=f"gap p99 via gateway {_ms(s.gap_p99)}; p50 {_ms(s.gap_p50)} via gateway, "
                 f"{_ms(s.direct_gap_p50)} direct; gateway CPU {s.gateway_cpu:.2f} s for the "
                 f"{s.streams} streams ({_ms(s.gateway_cpu / max(1, s.streams))} each); "
                 f"{_load(s.load)}"),
    ]


def rows(numbers: Numbers) -> list[Row]:
    sizes = sorted({turns for _, turns in numbers.faces})
    out: list[Row] = []
    for face in TITLES:
        for position, turns in enumerate(sizes):
            measured = numbers.faces.get((face, turns))
            if measured is not None:
                out += _face_rows(face, turns, position, measured)
                if measured.litellm is not None:
                    out += _litellm_rows(face, turns, measured, measured.litellm,
                                         numbers.litellm_version)
    out += _litellm_notes(numbers)
    if numbers.healthz is not None:
        out += _healthz_rows(numbers.healthz)
    if numbers.streams is not None:
        out += _stream_rows(numbers.streams)
    return out
