"""Loopback provider emulators for offline tests and ``thoughtline demo``.

They encode the providers' documented contracts (each rule cites its public source; the rules
are summed up in docs/providers.md) independently of the
codecs and routes they are used to test: nothing here imports ``thoughtline.codecs``,
``thoughtline.routes`` or ``thoughtline.replay``.

Constants live with their owners: ``personalities.PERSONALITIES`` (every personality by name),
``signing.DEFAULT_SECRET`` and ``signing.SKIP_THOUGHT_SIGNATURE`` (Gemini's documented dummy).
Run an emulator in another process with ``python -m thoughtline.testing PERSONALITY [--port N]``.
"""

from thoughtline.testing.chat_emulator import ChatEmulator
from thoughtline.testing.personalities import Personality
from thoughtline.testing.server import Received
from thoughtline.testing.signing import Signer

__all__ = [
    "ChatEmulator",
    "Personality",
    "Received",
    "Signer",
]
