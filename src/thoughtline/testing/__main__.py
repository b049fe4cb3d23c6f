"""``python -m thoughtline.testing PERSONALITY [--port N] [--no-auth] [--chunk-delay SECONDS]``.

Starts one chat emulator, prints its base URL as the first line of stdout, and serves until killed
(SIGINT or SIGTERM). Lets a test run a provider in another process, e.g. to kill it mid-stream.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from thoughtline.testing.chat_emulator import ChatEmulator
from thoughtline.testing.personalities import PERSONALITIES


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m thoughtline.testing", description="Run a loopback provider emulator."
    )
    parser.add_argument("personality", choices=sorted(PERSONALITIES))
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: any free one)")
    parser.add_argument(
        "--no-auth", action="store_true", help="accept requests without a bearer token"
    )
    parser.add_argument(
        "--chunk-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="pause before each streamed chunk (to kill the process mid-stream)",
    )
    args = parser.parse_args(argv)
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with ChatEmulator(args.personality, port=args.port, require_auth=not args.no_auth) as emu:
        emu.chunk_delay = args.chunk_delay
        print(emu.base_url, flush=True)
        while not stopping.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
