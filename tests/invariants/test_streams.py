"""Streams: each framing is read into the events it carries, exactly.

A JSON-array stream (Gemini without ``alt=sse``) is split into its elements exactly.

Through the transport's public ``stream_events`` against a loopback server that sends the array
in pieces cut at the worst places: right after a backslash, between an escaped quote and the
rest of its string, on brackets and commas inside strings. A backslash-escaped quote inside an
element's string never ends the string early, and an escaped backslash before a closing quote
does not hide it. An SSE event without an ``event:`` line has no name (the folds read the type
from the payload), and ``[DONE]`` ends the stream; an AWS event-stream exception frame reaches the
fold as ``exception:<type>`` (so it raises a typed error instead of looking like an event).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from thoughtline.testing.bedrock_frames import event_frame, exception_frame
from thoughtline.testing.loopback import LoopbackServer
from thoughtline.transport import HttpTransport, Target

ELEMENTS: list[Any] = [
    {"candidates": [{"content": {"parts": [{"text": 'she said "stop]," then {left}'}]}}]},
    {"candidates": [{"content": {"parts": [{"text": "a path C:\\dir\\ and a quote \\\""}]}}]},
    {"candidates": [{"content": {"parts": [{"text": "ends with a backslash \\"}]}}]},
    {"usageMetadata": {"totalTokenCount": 7}},
]


def _body() -> bytes:
    return b"[" + b"\r\n,".join(orjson.dumps(e) for e in ELEMENTS) + b"]"


def _pieces(cuts: list[int]) -> list[bytes]:
    body = _body()
    edges = [0, *sorted(set(cuts)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges) if b > a]


def _worst_cuts() -> list[int]:
    """Just after every backslash and every quote of the body."""
    body = _body()
    return [i + 1 for i, byte in enumerate(body) if byte in b'\\"']


async def _received(pieces: list[bytes], framing: str = "json-array",
                    media: str = "application/json") -> list[tuple[str, Any]]:
    async def stream(_: Request) -> StreamingResponse:
        async def chunks() -> AsyncIterator[bytes]:
            for piece in pieces:
                yield piece
                await asyncio.sleep(0)
        return StreamingResponse(chunks(), media_type=media)

    server = LoopbackServer(Starlette(routes=[Route("/stream", stream, methods=["POST"])]),
                            name="json-array").start()
    transport = HttpTransport()
    try:
        target = Target(url=server.origin + "/stream", framing=framing)
        return [event async for event in transport.stream_events(target, b"{}")]
    finally:
        await transport.aclose()
        server.stop()


@pytest.mark.parametrize("cuts", ["worst", "whole", "bytewise"])
def test_json_array_elements_come_out_whole_whatever_the_chunking(cuts: str) -> None:
    body = _body()
    chosen = {"worst": _worst_cuts(), "whole": [], "bytewise": list(range(1, len(body)))}[cuts]
    events = asyncio.run(_received(_pieces(chosen)))
    assert [orjson.dumps(payload) for _, payload in events] == [orjson.dumps(e)
                                                                for e in ELEMENTS]


def test_sse_events_without_an_event_line_have_no_name_and_done_ends_the_stream() -> None:
    body = (b'data: {"a":1}\n\n'
            b'event: response.created\ndata: {"b":2}\n\n'
            b": a comment\n\n"
            b"data: [DONE]\n\n"
            b'data: {"after":"done"}\n\n')
    events = asyncio.run(_received([body[:9], body[9:]], "sse", "text/event-stream"))
    assert events == [("", {"a": 1}), ("response.created", {"b": 2})]


def test_an_aws_event_stream_exception_frame_is_read_as_an_exception() -> None:
    body = (event_frame("messageStart", {"role": "assistant"})
            + exception_frame("throttlingException", "Too many requests, please wait."))
    events = asyncio.run(_received([body[:7], body[7:]], "aws-eventstream",
                                   "application/vnd.amazon.eventstream"))
    assert events[0] == ("messageStart", {"role": "assistant"})
    assert events[1][0] == "exception:throttlingException"
    assert events[1][1]["message"] == "Too many requests, please wait."
