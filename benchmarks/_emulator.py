"""A Chat Completions emulator for the benchmarks, one that keeps no request it received.

    python -m benchmarks._emulator PERSONALITY [--no-auth] [--chunk-delay SECONDS]

The same app as ``python -m thoughtline.testing PERSONALITY`` (``thoughtline.testing.server``),
but its record of requests keeps none: the benchmarks talk to the emulator from another process
and never read that record, and a long conversation's record grows as its square — the
gateway-floor scenario's 2,000-turn Messages conversation left ~1,000 bodies of up to 3 MB
(raw and parsed) in it, gigabytes on a shared 2-core machine. Prints the base URL (``…/v1``)
as its first line and serves until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterable, Sequence
from types import FrameType
from typing import SupportsIndex

from thoughtline.testing.loopback import LoopbackServer
from thoughtline.testing.personalities import PERSONALITIES
from thoughtline.testing.server import EmulatorState, Received, build_app
from thoughtline.testing.signing import DEFAULT_SECRET, Signer


class Unkept(list[Received]):
    """A request record that counts what it is given and keeps none of it."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def append(self, item: Received) -> None:
        self.seen += 1

    def extend(self, items: Iterable[Received]) -> None:
        self.seen += sum(1 for _ in items)

    def insert(self, index: SupportsIndex, item: Received) -> None:
        self.seen += 1


def state(personality: str, *, require_auth: bool, chunk_delay: float) -> EmulatorState:
    """The emulator's state with a record that keeps nothing."""
    return EmulatorState(personality=PERSONALITIES[personality], signer=Signer(DEFAULT_SECRET),
                         require_auth=require_auth, received=Unkept(), chunk_delay=chunk_delay)


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._emulator")
    parser.add_argument("personality", choices=sorted(PERSONALITIES))
    parser.add_argument("--no-auth", action="store_true")
    parser.add_argument("--chunk-delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    app = build_app(state(args.personality, require_auth=not args.no_auth,
                          chunk_delay=args.chunk_delay))
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with LoopbackServer(app, name="benchmark emulator") as server:
        print(f"{server.origin}/v1", flush=True)
        while not stopping.wait(0.5):
            pass


if __name__ == "__main__":
    main(sys.argv[1:])
