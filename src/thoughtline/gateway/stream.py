"""Serving answers while the client may leave: a cancel-on-disconnect SSE response and runner.

Owns what happens when a client goes away: the work for it (the upstream request, streamed or
not) is cancelled at once, and the upstream stream is closed, rather than left running until a
write to the dead socket fails or the garbage collector finalizes it. Frames come ready-made as
bytes (the Chat wire is ``codecs.openai_chat.client``'s).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
from starlette.types import Receive, Scope, Send

T = TypeVar("T")

_SSE_HEADERS = ((b"content-type", b"text/event-stream; charset=utf-8"),
                (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no"))


async def _wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def unless_disconnected(receive: Receive,
                              work: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
    """Run ``work()``; cancel it if the client disconnects first. Returns (finished, result)."""
    result: list[T] = []
    failed: list[Exception] = []

    async with anyio.create_task_group() as group:
        async def run() -> None:
            try:
                result.append(await work())
            except Exception as exc:  # re-raised below, not wrapped in an exception group
                failed.append(exc)
            group.cancel_scope.cancel()

        async def watch() -> None:
            await _wait_disconnect(receive)
            group.cancel_scope.cancel()

        group.start_soon(run)
        group.start_soon(watch)
    if failed:
        raise failed[0]
    return (True, result[0]) if result else (False, None)


class EventStreamResponse:
    """An ASGI ``text/event-stream`` response of ready frames, cancelled when the client leaves.

    ``on_close(completed)`` runs once at the end (``completed`` is False when the client left or
    sending failed), shielded from cancellation, after the frame iterator was closed.
    """

    def __init__(self, frames: AsyncIterator[bytes], *, headers: Mapping[str, str],
                 on_close: Callable[[bool], Awaitable[None]] | None = None) -> None:
        self.frames = frames
        self.headers = [*_SSE_HEADERS, *((k.lower().encode(), v.encode())
                                         for k, v in headers.items())]
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        completed = False
        try:
            async with anyio.create_task_group() as group:
                async def watch() -> None:
                    await _wait_disconnect(receive)
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                completed = await self._send_all(send)
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                aclose: Any = getattr(self.frames, "aclose", None)
                if aclose is not None:
                    await aclose()
                if self.on_close is not None:
                    await self.on_close(completed)

    async def _send_all(self, send: Send) -> bool:
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.headers})
            async for frame in self.frames:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except Exception:  # the client went away (OSError) or a frame failed: end quietly
            return False
        return True
