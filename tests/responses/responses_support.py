"""Helpers for the Responses end-to-end tests: a session on the Responses emulator, the real CLI
in a fresh process, and reading what the emulator received *as bytes*.

Owns test conveniences only; expectations stay in the tests. Imports nothing from the codec: what
went on the wire is read from the emulator's record of raw request bodies.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from thoughtline.config import ProviderConfig
from thoughtline.events import Done, Event, Notice
from thoughtline.messages import Message, ToolResult, ToolSpec
from thoughtline.session import Session, TurnOptions
from thoughtline.store import Store, open_store
from thoughtline.testing.responses_emulator import ResponsesEmulator
from thoughtline.testing.server import Received
from thoughtline.transport import HttpTransport

KEY_ENV = "TL_RESPONSES_TEST_KEY"
LOOKUP = ToolSpec(name="lookup", description="Look a fact up.",
                  parameters={"type": "object", "properties": {"query": {"type": "string"}},
                              "required": ["query"]})
_SCRIPT = Path(sys.executable).with_name("thoughtline")
ENTRY = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "thoughtline.cli.main"]


def provider_at(emu: ResponsesEmulator, model: str = "gpt-5.5") -> ProviderConfig:
    """The ``openai-responses`` preset's route, pointed at the emulator (the id is kept)."""
    return ProviderConfig(id="openai-responses", api="openai-responses", base_url=emu.base_url,
                          key_env=KEY_ENV, model=model)


def store_at(home: Path) -> Store:
    return open_store(None, home)


def turn(session: Session, message: Any, *, stream: bool = True) -> list[Event]:
    """One turn on its own event loop, with a transport made for that loop."""
    async def run() -> list[Event]:
        session.transport = HttpTransport()
        try:
            return [e async for e in session.stream(message, TurnOptions(stream=stream))]
        finally:
            await session.aclose()
    return asyncio.run(run())


def done_of(events: Sequence[Event]) -> Done:
    found = [e for e in events if isinstance(e, Done)]
    assert len(found) == 1, events
    return found[0]


def notices(events: Sequence[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice)]


def answer_calls(answer: Done | Message, text: str = "sunny") -> list[ToolResult]:
    message = answer.message if isinstance(answer, Done) else answer
    return [ToolResult(call_id=c.id, content=text) for c in message.tool_calls]


# --- what the emulator received ---------------------------------------------------------------


def reasoning_in(record: Received) -> list[dict[str, Any]]:
    return [i for i in record.body["input"] if i.get("type") == "reasoning"]


def in_place(record: Received) -> bool:
    """Each reasoning item is followed by an output item with an id (the one it led to)."""
    items = record.body["input"]
    return all(i + 1 < len(items) and items[i + 1].get("id") for i, item in enumerate(items)
               if item.get("type") == "reasoning")


def cli(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("THOUGHTLINE_",)) and not k.endswith(("_API_KEY", "_TOKEN"))}
    env.update(THOUGHTLINE_HOME=str(home), PYTHONUNBUFFERED="1", NO_COLOR="1")
    env[KEY_ENV] = "sk-fake-responses"
    return subprocess.run([*ENTRY, *args], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False, stdin=subprocess.DEVNULL)


def raw_contains(record: Received, value: Any) -> bool:
    """True when the serialized ``value`` occurs byte for byte in the raw request body."""
    return orjson.dumps(value) in record.raw


def reject_next_item(emu: ResponsesEmulator, item: Mapping[str, Any]) -> None:
    """The next request fails with OpenAI's wording for one unreadable encrypted item (the real
    wording, hermes-agent #32617), naming ``item``."""
    emu.fail_next(400, {"error": {
        "message": f"The encrypted content for item {item['id']} could not be verified. "
                   "Reason: Encrypted content could not be decrypted or parsed.",
        "type": "invalid_request_error", "param": None, "code": "invalid_encrypted_content"}})

