"""Test helper: a request walked from each turn's stored values, read back from JSON as the
core's wire cache keeps them (facts, after facts), against ``walk_turns`` over the messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import Encoded, RequestSpec, TurnFacts, Walk, context_key, walk_turns
from thoughtline.messages import Message, ToolSpec

TOOL = ToolSpec(name="f", description="d", parameters={"type": "object"})


def read_back(codec: Any, history: list[Message], plan: replay.ReplayPlan,
              spec: RequestSpec) -> tuple[Encoded, list[str]]:
    """The request walked from each turn's stored values (bytes, facts and after facts as the
    store keeps them: JSON), and the contexts the walk found."""
    turns = codec.turns
    stored = []
    for message, facts in zip(history, [turns.facts(m) for m in history], strict=True):
        raw = orjson.dumps(facts.to_json())
        stored.append((message, TurnFacts.from_json(orjson.loads(raw), turns.extra_type)))
        assert stored[-1][1] == facts
    facts_read = [f for _, f in stored]
    state = turns.start(plan, spec, facts_read)
    data_read, afters_read, contexts = [], [], []
    for index, (message, facts) in enumerate(stored):
        context = turns.context(state, index, facts)
        data, after = turns.encode_turn(message, plan, context)  # what a store row holds
        after_read = turns.after_type.from_json(orjson.loads(orjson.dumps(after.to_json())))
        assert after_read == after
        state = turns.advance(state, facts, context, after_read)
        data_read.append(data)
        afters_read.append(after_read)
        contexts.append(context_key(context))
    fragments = [orjson.Fragment(d) for d in data_read if d]
    walk = Walk(state=state, turns=data_read, fragments=fragments, facts=facts_read,
                afters=afters_read, contexts=contexts, history=history)
    return turns.assemble(walk, spec, plan), contexts


def same_request(api: str, history: list[Message], plan: replay.ReplayPlan, model: str,
                 bodies: Sequence[str]) -> None:
    """The request from read-back turns is the fresh one: bytes, summary, every lesson."""
    codec = registry.codec(api)
    spec = RequestSpec(model=model, tools=(TOOL,), params={"max_tokens": 2000}, stream=True)
    fresh = walk_turns(codec.turns, history, plan, spec)
    stored, contexts = read_back(codec, history, plan, spec)
    assert stored.raw == fresh.raw
    assert all(isinstance(c, str) for c in contexts)
    assert codec.summary(stored) == codec.summary(fresh)
    for body in bodies:
        assert codec.classify(400, body, stored, plan) == codec.classify(400, body, fresh, plan)
