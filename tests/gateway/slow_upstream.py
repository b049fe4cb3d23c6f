"""A Chat Completions upstream on raw loopback sockets that takes its time before answering.

Owns only what the transport tests need to see from the far side: how many requests arrived,
how many connections are open now, and how many were closed by the gateway before an answer was
written (a cancelled request). ``delay`` is the wait before the first byte of the answer; ``None``
never answers (a hung upstream). Answers are fixed and valid for the generic Chat route, whole or
streamed as the request asks.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Self

import orjson

_MESSAGE = {"role": "assistant", "content": "slow but sure"}
_WHOLE = orjson.dumps({
    "id": "chatcmpl-slow", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": _MESSAGE, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}})
_CHUNKS = [
    {"id": "chatcmpl-slow", "object": "chat.completion.chunk", "created": 0, "model": "m",
     "choices": [{"index": 0, "delta": _MESSAGE, "finish_reason": None}]},
    {"id": "chatcmpl-slow", "object": "chat.completion.chunk", "created": 0, "model": "m",
     "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
]
_STREAMED = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in _CHUNKS) + b"data: [DONE]\n\n"


class SlowUpstream:
    """Serves on 127.0.0.1 in a thread; counters are read from the test thread."""

    def __init__(self, delay: float | None) -> None:
        self.delay = delay
        self.requests = 0
        self.answered = 0
        #: Connections the gateway closed while its request was still waiting for the answer.
        self.abandoned = 0
        self.open = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _count(self, name: str, step: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + step)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._count("open")
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._count("open", -1)
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        body = await reader.readexactly(length)
        self._count("requests")
        try:
            # Waiting for the answer; an EOF meanwhile means the gateway gave the request up.
            eof = await asyncio.wait_for(reader.read(1), self.delay)
        except TimeoutError:
            eof = None
        if eof is not None:
            self._count("abandoned")
            return False
        streamed = orjson.loads(body).get("stream") is True
        payload = _STREAMED if streamed else _WHOLE
        kind = b"text/event-stream" if streamed else b"application/json"
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: " + kind + b"\r\ncontent-length: "
                     + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        await writer.drain()
        self._count("answered")
        return True

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop

        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            self._ready.set()

        loop.run_until_complete(start())
        loop.run_forever()
        loop.close()

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._run, name="slow-upstream", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the slow upstream did not start")
        return self

    def stop(self) -> None:
        loop, server = self._loop, self._server
        if loop is None or server is None or self._thread is None:
            return

        async def close() -> None:
            server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes (a bound, not an assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()
