"""A transport that breaks a stream off where a test says, for any API (tests only).

Wraps the real ``HttpTransport``: every request goes to the emulator as usual; a stream is cut
(``StreamInterrupted``, as a dropped connection raises) just before the first event the test
names, so a session sees exactly what a real interrupted answer gives it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson

from thoughtline.errors import StreamInterrupted
from thoughtline.transport import HttpTransport
from thoughtline.transport.http import Target


class CutTransport(HttpTransport):
    """``cut_before(event, holding)``: the next stream breaks off just before its first
    ``event`` whose JSON payload holds the text ``holding``."""

    def __init__(self) -> None:
        super().__init__()
        self._cut: tuple[str, bytes] | None = None
        self.cuts = 0  # how many streams were actually cut

    def cut_before(self, event_type: str, holding: str = "") -> None:
        self._cut = (event_type, holding.encode())

    async def stream_events(self, target: Target, body: bytes) -> AsyncIterator[tuple[str, Any]]:
        cut, self._cut = self._cut, None
        async with contextlib.aclosing(super().stream_events(target, body)) as events:
            async for event in events:
                if cut is not None and event[0] == cut[0] and cut[1] in orjson.dumps(event[1]):
                    self.cuts += 1
                    raise StreamInterrupted("the test cut the stream here")
                yield event
