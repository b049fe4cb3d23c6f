"""Scenario 3 — stream fold: a 10,000-chunk stream folded into one canonical assistant turn.

Ours is what a session does per chunk (``orjson.loads`` of the event's data, ``StreamFold.add``)
plus ``finish`` at the end; the floor is ``orjson.loads`` of every chunk alone. Three shapes, all
Chat Completions: DeepSeek (``reasoning_content`` deltas), OpenRouter (``reasoning`` plus
``reasoning_details`` deltas, with a signature at the end of the thinking), and a DeepSeek stream
that is mostly one long tool-call argument (a model writing a file through a tool).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from benchmarks import synth
from benchmarks.measure import Budget, Row, at_most, not_built, paired, ratio
from thoughtline.codecs import openai_chat, registry
from thoughtline.events import Done

SCENARIO = "stream fold"
CHUNKS = 10_000
QUICK_CHUNKS = 1_000
TARGET_RATIO = 3.0
#: (The Anthropic, Gemini, Bedrock and Responses rows live in benchmarks/<api>_rows.py.)
OTHER_APIS: tuple[tuple[str, str], ...] = ()


def fold(chunks: Sequence[bytes]) -> Done:
    """Parse and fold every chunk, then finish (the measured path)."""
    state = openai_chat.StreamFold(synth.ORIGIN)
    add = state.add
    loads = orjson.loads
    for raw in chunks:
        add(loads(raw))
    return state.finish()


def parse_only(chunks: Sequence[bytes]) -> None:
    loads = orjson.loads
    for raw in chunks:
        loads(raw)


def run(budget: Budget, *, quick: bool) -> list[Row]:
    count = QUICK_CHUNKS if quick else CHUNKS
    rows: list[Row] = []
    for shape in synth.STREAM_SHAPES:
        chunks = synth.stream_chunks(shape, count)
        t, floor, reps = paired(fold, parse_only, budget, prepare=lambda c=chunks: c,
                                floor_prepare=lambda c=chunks: c)
        r = ratio(t, floor)
        rows.append(Row(scenario=SCENARIO, case=f"chat {shape} stream", size=f"{count:,} chunks",
                        ours=t, floor=floor, floor_kind="orjson.loads per chunk", ratio=r,
                        target=f"≤ {TARGET_RATIO:g}× floor", ok=at_most(r, TARGET_RATIO),
                        reps=reps, extra={"stream_bytes": sum(len(c) for c in chunks)}))
    known = set(registry.apis())
    for api, name in OTHER_APIS:
        note = "codec exists; benchmark not wired yet" if api in known else "codec not built yet"
        rows.append(not_built(SCENARIO, name, note))
    return rows
