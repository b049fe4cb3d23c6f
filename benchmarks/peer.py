"""Scenario 7 — peer: LiteLLM's Anthropic request transformation beside our request build.

Both run on the same 1,000-turn history in one child process (``_peer_child``), interleaved call
by call. LiteLLM's side is ``AnthropicConfig.transform_request`` of the history as OpenAI-format
messages with ``thinking_blocks`` plus the ``json.dumps`` LiteLLM sends; ours is our Anthropic
Messages build of the same conversation as canonical Claude turns (signed and redacted thinking,
tool calls), Anthropic against Anthropic. The ratio here is peer ÷ ours: how many times
faster we are. LiteLLM is optional (``pip install 'thoughtline[bench]'``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.measure import Row, at_least, process, ratio

SCENARIO = "peer (LiteLLM)"
TURNS = 1_000
TARGET = 20.0
ROOT = Path(__file__).resolve().parent.parent


def _ours_label() -> str:
    return "ours: Anthropic Messages build"


def run(*, quick: bool) -> list[Row]:
    if quick:
        return [Row(scenario=SCENARIO, case="LiteLLM Anthropic transform_request", size="—",
                    ours=None, note="skipped in --quick")]
    return measure(TURNS)


def measure(n: int, *, quick: bool = False) -> list[Row]:
    """Run the peer child on an ``n``-turn history and turn its numbers into rows."""
    argv = [sys.executable, "-m", "benchmarks._peer_child", str(n), *(["quick"] if quick else [])]
    data: dict[str, Any] = json.loads(process(argv, cwd=str(ROOT)).stdout)
    if "missing" in data:
        return [Row(scenario=SCENARIO, case="LiteLLM Anthropic transform_request", size="—",
                    ours=None, note=data["missing"])]
    size = f"N={n:,}"
    label = _ours_label()
    steady_x = ratio(data["peer_s"], data["ours_steady_s"])
    cold_x = ratio(data["peer_cold_s"], data["ours_cold_s"])
    kind = f"litellm {data['litellm_version']} AnthropicConfig.transform_request + json.dumps"
    return [
        Row(scenario=SCENARIO, case=label + ", steady", size=size, ours=data["ours_steady_s"],
            floor=data["peer_s"], floor_kind=kind, ratio=steady_x,
            target=f"≥ {TARGET:g}× faster", ok=at_least(steady_x, TARGET), reps=data["reps"],
            note="ratio = peer ÷ ours", extra=data),
        Row(scenario=SCENARIO, case=label + ", cold", size=size, ours=data["ours_cold_s"],
            floor=data["peer_cold_s"], floor_kind=kind, ratio=cold_x, reps=data["cold_reps"],
            note="ratio = peer ÷ ours; LiteLLM has no cache, every request is cold for it"),
    ]
