"""The Gemini Interactions workload of the resume rows: a stateless session (the whole history sent
every turn, every thought step's signature byte for byte) of N tool loops.

Each loop has the shape of ``gemini_rows``' (a user question, a model turn with a thought summary
and a function call, its result, and a model answer), on the Interactions API: each model turn's
thinking is a ``thought`` step carrying its signature (google-genai 3.6.1 ``ThoughtStep``),
~700-byte signatures as in ``gemini_rows``. Deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import orjson

from benchmarks.gemini_rows import TOOL, _signature, _words
from thoughtline import ProviderConfig, config, replay
from thoughtline.codecs.base import RequestSpec
from thoughtline.codecs.interactions.codec import CODEC
from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    system,
    tool_results,
    user,
)
from thoughtline.wire.cache import WireCache, encode

#: The stateless preset: a resumed session sends every stored turn (with ``store: true`` it sends
#: only what came after the last interaction it can continue).
PRESET = "gemini-interactions-stateless"


def provider() -> ProviderConfig:
    return config.presets()[PRESET]


def history(n: int) -> list[Message]:
    """``system`` + ``user`` + N tool loops (4 messages each)."""
    p = provider()
    host = (p.base_url or "").split("://")[-1].split("/")[0]
    origin = Origin(api=p.api, provider=p.id, host=host, model=p.model)
    rng = random.Random(12)
    out: list[Message] = [system("You are a helpful assistant."), user("Start.")]
    for i in range(n):
        call = ToolCall(id=f"call{i:06d}", name=TOOL.name,
                        arguments=orjson.dumps({"query": _words(rng, 4)}).decode())
        out.append(Message(role="assistant", origin=origin, parts=(
            Reasoning(kind="signed", summary=_words(rng, 60), signature=_signature(rng),
                      origin=origin), call)))
        out.append(tool_results([ToolResult(call_id=call.id, content=_words(rng, 80))]))
        out.append(Message(role="assistant", origin=origin, parts=(
            Reasoning(kind="signed", signature=_signature(rng), origin=origin),
            Text(text=_words(rng, 50)))))
        out.append(user(f"Question {i}: {_words(rng, 12)}"))
    return out


def request_bytes(history: Sequence[Message], cache: WireCache | None) -> bytes:
    """The request's bytes through the wire cache (``benchmarks.instructions``' cold and steady
    builds)."""
    p = provider()
    plan = replay.plan(CODEC.resolve(p.route_id, p.base_url, p.model), ())
    spec = RequestSpec(model=p.model, tools=(TOOL,), stream=True)
    return encode(CODEC, history, plan, spec, cache).raw
