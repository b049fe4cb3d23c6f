"""One turn through the real ``TurnEngine`` whose provider answers with a given (possibly broken)
reply: a canned transport hands the parsed reply to the engine exactly as the HTTP transport
would (a whole body, or ``(event type, payload)`` pairs), and a sink records what was stored.

Shared by the malformed-reply tests and the reply fuzzers.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from thoughtline import config, messages
from thoughtline.codecs import registry, shape
from thoughtline.codecs.openai_chat import client
from thoughtline.errors import ProtocolError
from thoughtline.events import Done
from thoughtline.messages import Message, user
from thoughtline.modelconfig import ModelConfig
from thoughtline.turn import TurnEngine, TurnInput, TurnOptions

LOCAL = "http://127.0.0.1:9/v1"  # never contacted: the transport below is canned

#: (preset, model) per API: a route of that API (the loopback URL needs no key).
PROVIDERS = {
    "openai-chat": ("deepseek", "deepseek-v4-pro"),
    "anthropic": ("anthropic", "claude-sonnet-4-5"),
    "gemini": ("gemini", "gemini-3-pro-preview"),
    "bedrock": ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    "openai-responses": ("openai-responses", "gpt-5"),
}


class CannedTransport:
    """Answers every request with ``reply`` (a parsed body, or a list of stream events); with
    ``events``, whole requests get ``reply`` and streamed ones ``events``."""

    def __init__(self, reply: Any, events: Any = None) -> None:
        self.reply = reply
        self.events = events
        self.attempts = 0
        self.retries = 0

    async def post_json(self, target: Any, body: bytes) -> Any:
        self.attempts += 1
        return self.reply

    async def stream_events(self, target: Any, body: bytes) -> AsyncIterator[tuple[str, Any]]:
        self.attempts += 1
        for event in self.reply if self.events is None else self.events:
            yield event

    async def aclose(self) -> None:
        pass


@dataclass(kw_only=True, slots=True)
class RecordingSink:
    stored: list[Done] = field(default_factory=list)
    partials: list[Message | None] = field(default_factory=list)

    def learned(self, lesson: Any) -> None:
        pass

    def finished(self, pending: Sequence[Message], done: Done) -> None:
        self.stored.append(done)

    def interrupted(self, pending: Sequence[Message], partial: Message | None) -> None:
        self.partials.append(partial)


@dataclass(kw_only=True, slots=True)
class Outcome:
    done: Done | None
    error: ProtocolError | None
    sink: RecordingSink
    route: str


def turn_input(api: str) -> TurnInput:
    preset, model = PROVIDERS[api]
    provider = config.provider(preset, base_url=LOCAL, model=model)
    if api == "bedrock":
        provider = dataclasses.replace(provider, region="us-east-1")
    return TurnInput(codec=registry.codec(api), provider=provider,
                     config=ModelConfig(provider=provider), history=(),
                     pending=(user("hi"),))


async def _run(turn: TurnInput, reply: Any, stream: bool, sink: RecordingSink) -> Done | None:
    engine = TurnEngine(CannedTransport(reply))
    done = None
    async for event in engine.run(turn, sink, TurnOptions(stream=stream)):
        if isinstance(event, Done):
            done = event
    return done


def run_reply(api: str, reply: Any, *, stream: bool,
              loop: asyncio.AbstractEventLoop | None = None) -> Outcome:
    """Run one turn answered by ``reply``; only a ``ProtocolError`` may come out of it."""
    turn = turn_input(api)
    sink = RecordingSink()
    error = None
    done = None
    coroutine = _run(turn, reply, stream, sink)
    try:
        done = loop.run_until_complete(coroutine) if loop else asyncio.run(coroutine)
    except ProtocolError as exc:
        error = exc
    route = turn.route
    return Outcome(done=done, error=error, sink=sink, route=f"{route.provider}/{route.row}")


def check_outcome(outcome: Outcome) -> None:
    """The contract: an answer the engine returns is stored, storable and renderable; a broken
    reply is a ``ProtocolError`` naming the route, with nothing stored as complete."""
    if outcome.error is not None:
        assert outcome.sink.stored == []
        assert outcome.route in str(outcome.error)
        assert "\n" not in str(outcome.error)
        for partial in outcome.sink.partials:
            if partial is not None:
                messages.dumps(partial)
        return
    done = outcome.done
    if done is None:  # nothing came back: only a stream cut before any answer
        assert outcome.sink.stored == []
        return
    assert outcome.sink.stored == [done]
    messages.loads(messages.dumps(done.message))
    for call in done.message.tool_calls:  # what is stored is replayed: JSON any encoder can write
        assert not shape.text_deeper_than(call.arguments), call.arguments[:80]
    client.completion_json(done, response_id="chatcmpl-x", model="m", created=0)
    writer = client.ChunkWriter(response_id="chatcmpl-x", model="m", created=0,
                                include_usage=True)
    writer.finish(done)
