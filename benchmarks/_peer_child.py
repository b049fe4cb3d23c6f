"""Child process of the peer scenario (``python -m benchmarks._peer_child N QUICK``).

Runs in its own process so LiteLLM's heavy import (and its globals) never touch the other
scenarios. Times, in this one process and interleaved, LiteLLM's Anthropic request transformation
of an N-turn history (``AnthropicConfig.transform_request`` + the ``json.dumps`` LiteLLM sends)
beside our Anthropic Messages request build of the same conversation (``anthropic_rows``).
Prints one JSON object; ``{"missing": ...}`` when LiteLLM is not installed.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from typing import Any

from benchmarks import anthropic_rows, synth
from benchmarks.measure import FULL, QUICK, paired
from thoughtline.wire.cache import WireCache

ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"


def _litellm() -> tuple[Any, str] | None:
    # Keep LiteLLM offline: without this it fetches its model price map over the network.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from importlib.metadata import version

        from litellm.llms.anthropic.chat.transformation import AnthropicConfig
    except ImportError:
        return None
    return AnthropicConfig, version("litellm")


def main(n: int, quick: bool) -> dict[str, Any]:
    start = time.perf_counter()
    found = _litellm()
    if found is None:
        return {"missing": "litellm is not installed (pip install 'thoughtline[bench]')"}
    config_cls, litellm_version = found
    import_s = time.perf_counter() - start
    budget = QUICK if quick else FULL
    history = synth.history(n)
    openai = synth.openai_messages(history)
    tools = [{"name": synth.TOOL.name, "description": synth.TOOL.description,
              "input_schema": dict(synth.TOOL.parameters)}]
    config = config_cls()

    def litellm_args() -> dict[str, Any]:
        # transform_request edits what it is given: every call gets its own copy (untimed).
        return {"messages": copy.deepcopy(openai),
                "optional_params": {"max_tokens": 8192, "stream": True, "tools": tools,
                                    "thinking": {"type": "enabled", "budget_tokens": 4096}}}

    def peer(args: dict[str, Any]) -> str:
        body = config.transform_request(model=ANTHROPIC_MODEL, messages=args["messages"],
                                        optional_params=args["optional_params"],
                                        litellm_params={}, headers={})
        return json.dumps(body)

    # Ours: the same conversation as canonical Claude turns, built by our Anthropic codec.
    claude = anthropic_rows.history(n, pool=n)
    request_bytes = anthropic_rows.request_bytes
    head, tail = tuple(claude[:-3]), tuple(claude[-3:])
    cache = WireCache()
    request_bytes(head, cache)

    def fresh() -> list[Any]:
        from dataclasses import replace

        return [replace(m) for m in tail]

    steady, peer_s, reps = paired(lambda f: request_bytes([*head, *f], cache), peer,
                                  budget, prepare=fresh, floor_prepare=litellm_args)
    cold, peer_cold_s, cold_reps = paired(lambda c: request_bytes(claude, c), peer,
                                          budget, prepare=WireCache,
                                          floor_prepare=litellm_args)
    return {
        "litellm_version": litellm_version, "litellm_import_s": import_s, "turns": n,
        "ours_steady_s": steady, "peer_s": peer_s, "reps": reps,
        "ours_cold_s": cold, "peer_cold_s": peer_cold_s, "cold_reps": cold_reps,
        "ours_bytes": len(request_bytes(claude, None)),
        "peer_bytes": len(peer(litellm_args())),
        "ours_messages": len(json.loads(request_bytes(claude, None))["messages"]),
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), sys.argv[2:] == ["quick"])))
