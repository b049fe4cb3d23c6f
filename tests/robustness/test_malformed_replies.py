"""Malformed provider replies (issue 22, item 2): each crash the mutation fuzzer found in a codec
becomes a ``ProtocolError`` naming the field and the route, and nothing is stored.

Each case is a recorded reply (tests/fixtures, SOURCES.md) with one value replaced, run through
the real turn engine; before the fix each raised a TypeError, ValueError or IndexError (or stored
an answer that could not be rendered). The fuzzers in ``test_fuzz_replies`` search further.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson
import pytest
from cli_support import Cli
from fuzz_corpus import recordings
from reply_support import check_outcome, run_reply

from thoughtline.codecs import registry
from thoughtline.codecs.shape import MAX_DEPTH
from thoughtline.errors import ProtocolError

OUT_OF_RANGE = 2 ** 70


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def recording(api: str, name: str) -> Any:
    for found in recordings(api):
        if found.name.split("/", 1)[1].startswith(name):
            return found
    raise LookupError(name)


def with_value(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    out = copy.deepcopy(value)
    into = out
    for step in path[:-1]:
        into = into[step]
    into[path[-1]] = new
    return out


CHAT = "pydantic-ai-deepseek-thinking-tool-calls-roundtrip.i0.response.json"
CLAUDE = "pydantic-ai-anthropic-tool-with-thinking.i0.response.json"
CONVERSE = "pydantic-ai-bedrock-claude-tool-with-thinking.i0.response.json"
GEMINI = "fantasy-gemini3-pro-thinking-function-call.i0.response.json"
RESPONSES = "pydantic-ai-openai-responses-gpt55-phase.i0.response.json"

WHOLE_CASES = [
    # int() on a count that is an object, a string, a list, NaN; a count beyond int64
    ("openai-chat", CHAT, ("usage", "prompt_tokens"), {"n": 1}, "usage.prompt_tokens"),
    ("openai-chat", CHAT, ("usage", "completion_tokens"), 1e300, "usage.completion_tokens"),
    ("anthropic", CLAUDE, ("usage", "input_tokens"), "x", "usage.input_tokens"),
    ("bedrock", CONVERSE, ("usage", "inputTokens"), [1], "usage.inputTokens"),
    ("gemini", GEMINI, ("usageMetadata", "promptTokenCount"), float("nan"),
     "usageMetadata.promptTokenCount"),
    ("openai-responses", RESPONSES, ("usage", "output_tokens"), [1], "usage.output_tokens"),
    # tool arguments received as JSON that cannot be written back
    ("anthropic", CLAUDE, ("content", 2, "input"), {"x": OUT_OF_RANGE}, "tool_use.input"),
    ("bedrock", CONVERSE, ("output", "message", "content", 2, "toolUse", "input"),
     deep(300), "toolUse.input"),
    ("gemini", GEMINI, ("candidates", 0, "content", "parts", 1, "functionCall", "args"),
     {"x": OUT_OF_RANGE}, "functionCall.args"),
    # a verbatim (native) value the store could not write back, or one nested too deep
    ("openai-responses", RESPONSES, ("output", 0, "extra"), OUT_OF_RANGE, "native values"),
    ("openai-responses", RESPONSES, ("output", 0, "extra"), deep(MAX_DEPTH + 5),
     f"deeper than {MAX_DEPTH}"),
    # a lookup key that is a list
    ("openai-responses", RESPONSES, ("output", 1, "content", 0, "type"), ["output_text"],
     "content[].type"),
]


@pytest.mark.parametrize(("api", "name", "path", "value", "field"), WHOLE_CASES,
                         ids=[f"{c[0]}-{c[4]}" for c in WHOLE_CASES])
def test_a_malformed_whole_reply_is_a_protocol_error_naming_the_field(
        api: str, name: str, path: tuple[Any, ...], value: Any, field: str) -> None:
    body = with_value(recording(api, name).whole, path, value)
    outcome = run_reply(api, body, stream=False)
    assert outcome.error is not None, "the broken reply was accepted"
    assert field in str(outcome.error)
    check_outcome(outcome)  # the route is named, nothing was stored


STREAM_CASES = [
    # a list or an object used as a dict key in a fold
    ("anthropic", "pydantic-ai-anthropic-thinking-stream", "content_block_delta", "index", [0],
     "content_block_delta.index"),
    ("bedrock", "pydantic-ai-bedrock-claude-thinking-stream", "contentBlockDelta",
     "contentBlockIndex", {"i": 0}, "contentBlockIndex"),
    ("openai-responses", "pydantic-ai-openrouter-responses-raw-cot-stream",
     "response.output_text.delta", "type", ["x"], "type"),
    # the IndexError in the Responses fold: a negative output index out of range
    ("openai-responses", "pydantic-ai-openai-responses-gpt55-phase-stream.i0",
     "response.output_item.added", "output_index", -OUT_OF_RANGE, "output_index"),
    # iterating a number
    ("openai-chat", "pydantic-ai-deepseek-reasoner-stream", "", "choices", 1.5, "choices"),
]


def _event_kind(event: tuple[str, Any]) -> str:
    kind, payload = event
    if isinstance(payload, dict) and len(payload) == 1 and not kind:
        return next(iter(payload))
    return kind or (payload.get("type", "") if isinstance(payload, dict) else "")


@pytest.mark.parametrize(("api", "name", "kind", "key", "value", "field"), STREAM_CASES,
                         ids=[f"{c[0]}-{c[5]}" for c in STREAM_CASES])
def test_a_malformed_stream_event_is_a_protocol_error_naming_the_field(
        api: str, name: str, kind: str, key: str, value: Any, field: str) -> None:
    events = list(recording(api, name).events)
    at = next(i for i, e in enumerate(events) if _event_kind(e) == kind or not kind)
    event_type, payload = events[at]
    events[at] = (event_type, with_value(payload, (key,), value))
    outcome = run_reply(api, events, stream=True)
    assert outcome.error is not None, "the broken stream was accepted"
    assert f"`{field}`" in str(outcome.error)
    check_outcome(outcome)


@pytest.mark.parametrize("stream", [False, True])
def test_any_error_escaping_a_codec_becomes_a_protocol_error_naming_the_route(
        monkeypatch: pytest.MonkeyPatch, stream: bool) -> None:
    # The safety net under the codecs' own checks: whatever a decoder or fold raises on a reply
    # it did not expect reaches the caller as a ProtocolError, and nothing is stored.
    codec = registry.codec("openai-chat")

    class Exploding:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.saw_chunk, self.finished = False, False

        def add_event(self, event_type: str, payload: Any) -> list[Any]:
            self.saw_chunk = True
            return [][payload["missing"]]

        def finish(self, *, complete: bool = True) -> Any:
            raise KeyError("nothing")

    def exploding_decode(body: Any, origin: Any, *, seed: str = "") -> Any:
        return body["choices"][7]

    monkeypatch.setattr(type(codec), "decode_response",
                        lambda self, *a, **k: exploding_decode(*a, **k))
    monkeypatch.setattr(type(codec), "new_fold", lambda self, *a, **k: Exploding())
    reply = [("", {"choices": []})] if stream else {"choices": []}
    outcome = run_reply("openai-chat", reply, stream=stream)
    assert outcome.error is not None
    assert ("IndexError" if not stream else "KeyError") in str(outcome.error)
    check_outcome(outcome)
    assert outcome.sink.partials in ([], [None])


# --- replies nested too deep (item 3) and the CLI's one line --------------------------------------


class FixedReply:
    """A loopback provider answering every POST with the same bytes (a tiny ASGI app)."""

    def __init__(self, body: bytes, content_type: str = "application/json") -> None:
        self.body, self.content_type = body, content_type
        self.posts = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        self.posts += 1
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", self.content_type.encode())]})
        await send({"type": "http.response.body", "body": self.body})


def _transport_outcome(body: bytes, *, stream: bool) -> BaseException | None:
    from thoughtline.testing.loopback import LoopbackServer
    from thoughtline.transport import HttpTransport
    from thoughtline.transport.http import Target

    app = FixedReply(body, "text/event-stream" if stream else "application/json")
    server = LoopbackServer(app).start()

    async def go() -> None:
        transport = HttpTransport()
        target = Target(url=server.origin + "/v1/chat/completions", provider="deepseek")
        try:
            if stream:
                async for _ in transport.stream_events(target, b"{}"):
                    pass
            else:
                await transport.post_json(target, b"{}")
        finally:
            await transport.aclose()

    try:
        asyncio.run(go())
    except ProtocolError as exc:
        return exc
    finally:
        server.stop()
    return None


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 300, 1000])
def test_a_reply_nested_too_deep_is_refused_where_it_enters(stream: bool, levels: int) -> None:
    # orjson parses 1024 levels but writes only 255: a deep reply used to reach the codecs and
    # then the store (a RecursionError, or a serializer error blamed on the store).
    value = b"[" * (levels - 1) + b"1" + b"]" * (levels - 1)
    document = b'{"choices": ' + value + b"}"
    body = b"data: " + document + b"\n\ndata: [DONE]\n\n" if stream else document
    error = _transport_outcome(body, stream=stream)
    assert error is not None, "the deep reply was accepted"
    assert f"deeper than {MAX_DEPTH} levels" in str(error)


def test_a_reply_within_the_bound_is_accepted() -> None:
    inner = MAX_DEPTH - 1
    body = b'{"choices": ' + b"[" * inner + b"1" + b"]" * inner + b"}"
    assert _transport_outcome(body, stream=False) is None


def test_the_cli_prints_one_line_and_keeps_the_session(cli: Cli) -> None:
    whole = recording("openai-chat", CHAT).whole
    app = FixedReply(orjson.dumps(whole))
    from thoughtline.testing.loopback import LoopbackServer

    server = LoopbackServer(app).start()
    try:
        route = ("--provider", "deepseek", "--base-url", server.origin + "/v1", "--no-stream")
        first = cli.json("chat", *route, "-p", "hello", "--json")
        app.body = orjson.dumps(with_value(whole, ("usage", "prompt_tokens"), {"n": 1}))
        broken = cli.run("chat", *route, "-c", "-p", "and then?")
    finally:
        server.stop()
    assert broken.returncode == 1
    lines = broken.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), broken.stderr
    assert "usage.prompt_tokens" in lines[0] and "route deepseek/" in lines[0]
    assert app.posts == 2
    turns = cli.show(first["session"])
    assert [t["role"] for t in turns["turns"]] == ["user", "assistant"]


def test_an_error_body_nested_too_deep_still_gives_its_text() -> None:
    from thoughtline.transport.http import provider_message

    body = '{"error": {"message": ' + "[" * 300 + '"no"' + "]" * 300 + "}}"
    assert provider_message(body).startswith('{"error": {"message": [[[')
