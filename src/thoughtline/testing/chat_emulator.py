"""``ChatEmulator``: a loopback OpenAI-compatible provider for offline tests and the demo.

Owns the emulator's lifecycle (a uvicorn server on 127.0.0.1 in a background thread, on an OS-chosen
port unless one is given) and the controls a test uses: the record of requests, injected failures,
stream cutting and pacing. Provider behaviour lives in the personality modules; this module knows
none of it.

    with ChatEmulator("deepseek") as emu:
        httpx.post(f"{emu.base_url}/chat/completions", ...)
        emu.received[-1].body
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from thoughtline.testing.loopback import HOST as _HOST
from thoughtline.testing.loopback import LoopbackServer
from thoughtline.testing.personalities import PERSONALITIES, Personality
from thoughtline.testing.server import (
    EmulatorState,
    InjectedFailure,
    QuietStreamCuts,
    Received,
    StreamCut,
    build_app,
)
from thoughtline.testing.signing import DEFAULT_SECRET, OpaqueKind, Signer


def _default_failure_body(status: int) -> dict[str, Any]:
    return {
        "error": {
            "message": f"Injected failure (HTTP {status}).",
            "type": "server_error" if status >= 500 else "invalid_request_error",
            "code": status,
        }
    }


def _quiet_stream_cuts() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, QuietStreamCuts) for f in logger.filters):
        logger.addFilter(QuietStreamCuts())


class ChatEmulator:
    """A loopback Chat Completions server playing one provider personality.

    ``personality`` is a name from ``PERSONALITIES`` or a ``Personality`` record. Requests without
    an ``Authorization: Bearer …`` header get 401 unless ``require_auth`` is False. Opaque values
    are signed with ``secret``; instances sharing a secret accept each other's values.
    """

    def __init__(
        self,
        personality: str | Personality = "plain",
        *,
        port: int = 0,
        require_auth: bool = True,
        secret: bytes = DEFAULT_SECRET,
    ) -> None:
        if isinstance(personality, str):
            if personality not in PERSONALITIES:
                known = ", ".join(sorted(PERSONALITIES))
                raise ValueError(f"unknown personality {personality!r} (known: {known})")
            personality = PERSONALITIES[personality]
        self._state = EmulatorState(
            personality=personality, signer=Signer(secret), require_auth=require_auth
        )
        self._loop = LoopbackServer(build_app(self._state), port=port, name="chat-emulator")
        self._port: int | None = None

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None else "stopped"
        return f"ChatEmulator({self.personality.name!r}, {where})"

    @property
    def personality(self) -> Personality:
        return self._state.personality

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the emulator is not running; call start() first")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: append ``/chat/completions`` or ``/models``."""
        return f"http://{_HOST}:{self.port}/v1"

    @property
    def received(self) -> list[Received]:
        """Every request so far, oldest first, including rejected and failed ones (a live list)."""
        return self._state.received

    @property
    def issued(self) -> Mapping[str, OpaqueKind]:
        """Opaque values this instance issued (value → kind)."""
        return self._state.signer.issued

    @property
    def chunk_delay(self) -> float:
        """Seconds slept before each streamed data chunk (0 = none)."""
        return self._state.chunk_delay

    @chunk_delay.setter
    def chunk_delay(self, seconds: float) -> None:
        self._state.chunk_delay = seconds

    @property
    def chunks_sent(self) -> int:
        """Streamed data chunks sent so far, over all requests (a test's event to wait on)."""
        return self._state.chunks_sent

    def fail_next(
        self, status: int, body: Any = None, headers: Mapping[str, str] | None = None
    ) -> None:
        """Queue one response returned before normal handling of the next chat request.

        Calls queue up in order; each failed request is still recorded in ``received``.
        """
        self._state.failures.append(
            InjectedFailure(
                status=status,
                body=_default_failure_body(status) if body is None else body,
                headers=dict(headers or {}),
            )
        )

    def cut_stream_after(self, n: int, *, graceful: bool = False) -> None:
        """Stop the next streamed response after ``n`` data chunks, without ``data: [DONE]``.

        By default the connection is dropped mid-body; ``graceful=True`` ends the body cleanly.
        """
        self._state.cuts.append(StreamCut(after=n, graceful=graceful))

    def start(self) -> Self:
        """Start serving in a background thread; returns once the port accepts connections."""
        if self._loop.running:
            return self
        _quiet_stream_cuts()
        self._loop.start()
        self._port = self._loop.port
        return self

    def stop(self) -> None:
        """Stop serving and wait for the server thread (in-flight streams get about a second)."""
        self._loop.stop()
        self._port = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
