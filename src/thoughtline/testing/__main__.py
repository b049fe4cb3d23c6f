"""``python -m thoughtline.testing EMULATOR [--port N] [--no-auth] [--chunk-delay SECONDS]``.

Starts one loopback emulator — a Chat Completions personality, or the Anthropic, Gemini, Bedrock
or Responses one — prints its base URL as the first line of stdout, and serves until killed
(SIGINT or SIGTERM). That URL is what ``--base-url`` and a ``gateway.toml`` ``[[upstream]]``
``base_url`` take, so a gateway or an agent can be tried without a key or the network; tests use
it to run a provider in another process (e.g. to kill it mid-stream).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

from thoughtline.testing.personalities import PERSONALITIES


@dataclass(frozen=True, kw_only=True, slots=True)
class _Native:
    """A native-API emulator: what it speaks, the preset to point at it, and how to make it."""

    speaks: str
    preset: str
    make: Callable[[argparse.Namespace], Any]
    url: Callable[[Any], str] = lambda emulator: emulator.base_url


def _anthropic(args: argparse.Namespace) -> Any:
    from thoughtline.testing.anthropic_emulator import AnthropicEmulator

    return AnthropicEmulator(port=args.port, require_auth=not args.no_auth)


def _gemini(args: argparse.Namespace) -> Any:
    from thoughtline.testing.gemini_emulator import GeminiEmulator

    return GeminiEmulator(port=args.port, require_auth=not args.no_auth)


def _bedrock(args: argparse.Namespace) -> Any:
    from thoughtline.testing.bedrock_emulator import BedrockEmulator

    # Any SigV4 signature scoped to the region is accepted (it never sees a secret to check).
    return BedrockEmulator(port=args.port, region=args.region)


def _responses(personality: str) -> Callable[[argparse.Namespace], Any]:
    def make(args: argparse.Namespace) -> Any:
        from thoughtline.testing.responses_emulator import ResponsesEmulator

        return ResponsesEmulator(personality, port=args.port, require_auth=not args.no_auth)
    return make


NATIVE: dict[str, _Native] = {
    "anthropic": _Native(speaks="Anthropic Messages", preset="anthropic", make=_anthropic),
    "gemini": _Native(speaks="Gemini generateContent", preset="gemini", make=_gemini),
    "bedrock": _Native(speaks="Bedrock Converse (SigV4; any AWS keys, --region)",
                       preset="bedrock", make=_bedrock, url=lambda emu: emu.endpoint_url),
    "responses": _Native(speaks="OpenAI Responses", preset="openai-responses",
                         make=_responses("openai")),
    "responses-xai": _Native(speaks="OpenAI Responses, xAI's wordings", preset="xai-responses",
                             make=_responses("xai")),
    "responses-relay": _Native(speaks="OpenAI Responses, a relay's wordings",
                               preset="openrouter-responses", make=_responses("relay")),
}


def _chat(args: argparse.Namespace) -> Any:
    from thoughtline.testing.chat_emulator import ChatEmulator

    return ChatEmulator(args.emulator, port=args.port, require_auth=not args.no_auth)


def _listing() -> str:
    native = "\n".join(f"  {name:<16} {n.speaks} (provider = \"{n.preset}\")"
                       for name, n in NATIVE.items())
    chat = ", ".join(sorted(PERSONALITIES))
    return (f"emulators:\n{native}\n  Chat Completions personalities (provider = the preset "
            f"each imitates, e.g. \"deepseek\"; \"custom\" for plain, local and strict-custom):"
            f"\n    {chat}\n\n"
            "The printed URL is the --base-url for thoughtline chat, or an [[upstream]] base_url "
            "in gateway.toml.\nExample: python -m thoughtline.testing anthropic --no-auth")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m thoughtline.testing", description="Run a loopback provider emulator "
        "and print its base URL.", epilog=_listing(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("emulator", metavar="EMULATOR",
                        choices=sorted({*NATIVE, *PERSONALITIES}),
                        help="which emulator to start (listed below)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: any free one)")
    parser.add_argument("--no-auth", action="store_true",
                        help="accept requests without a key (Bedrock always wants a SigV4 header)")
    parser.add_argument("--region", default="us-east-1",
                        help="Bedrock only: the region signatures are scoped to")
    parser.add_argument("--chunk-delay", type=float, default=0.0, metavar="SECONDS",
                        help="pause before each streamed chunk (to kill the process mid-stream; "
                        "Chat and Responses emulators)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    native = NATIVE.get(args.emulator)
    emulator = native.make(args) if native else _chat(args)
    if args.chunk_delay:
        if not hasattr(emulator, "chunk_delay"):
            parser.error(f"--chunk-delay is not available for {args.emulator}")
        emulator.chunk_delay = args.chunk_delay
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with emulator:
        print(native.url(emulator) if native else emulator.base_url, flush=True)
        while not stopping.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
