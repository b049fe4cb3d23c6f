"""Helpers for the session-level acceptance tests: cases, a conversation driver, a fresh process.

Owns test conveniences only: which emulator personality is played under which provider id and
model, running the three-turn tool loop through the public ``Session`` API, reading the emulators'
records, and running ``session_worker.py`` in another Python process. Expectations (which carrier
fields each route must receive) stay in the tests, written from the providers' public docs,
not read from the route table.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson

from thoughtline import (
    Done,
    ProviderConfig,
    Session,
    ToolResult,
    ToolSpec,
    TurnOptions,
    config,
    open_store,
)
from thoughtline.messages import dumps
from thoughtline.testing import ChatEmulator, Received

T = TypeVar("T")
WORKER = Path(__file__).with_name("session_worker.py")

TOOLS = (
    ToolSpec(
        name="weather",
        description="Current weather for a city",
        parameters={"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]},
    ),
)
#: Keys of an assistant wire message that are not reasoning carriers.
PLAIN_ASSISTANT_KEYS = frozenset({"role", "content", "tool_calls"})


@dataclass(frozen=True, slots=True)
class Case:
    """One emulator personality played under a provider id (so its route rules apply)."""

    personality: str
    provider: str
    model: str
    auth: bool = True  # local servers take no key

    @property
    def id(self) -> str:
        if self.personality == "openrouter":
            return f"openrouter-{self.model.split('/')[0]}"
        return self.personality


CASES: tuple[Case, ...] = (
    Case("deepseek", "deepseek", "deepseek-reasoner"),
    Case("kimi", "kimi", "kimi-k2.6"),
    Case("mimo", "xiaomi", "mimo-v2-flash"),
    Case("mistral", "mistral", "magistral-medium-latest"),
    Case("groq", "groq", "openai/gpt-oss-120b"),
    Case("cerebras", "cerebras", "gpt-oss-120b"),
    Case("strict-custom", "custom", "strict-reasoner"),
    Case("openrouter", "openrouter", "anthropic/claude-sonnet-4.5"),
    Case("openrouter", "openrouter", "openai/gpt-5"),
    Case("openrouter", "openrouter", "google/gemini-3-pro-preview"),
    Case("gemini-openai", "gemini-openai", "gemini-3-pro-preview"),
    Case("copilot", "copilot", "claude-sonnet-4.5"),
    Case("plain", "custom", "demo-reasoner"),
    Case("local", "vllm", "local-reasoner", auth=False),
)
CASE_BY_ID = {case.id: case for case in CASES}


def run(awaitable: Awaitable[T]) -> T:
    """Run one scenario on a fresh event loop (each scenario owns its sessions' transports)."""
    async def main() -> T:
        return await awaitable
    return asyncio.run(main())


def provider_for(case: Case, emu: ChatEmulator, **changes: Any) -> ProviderConfig:
    """The case's preset with ``--base-url`` pointing at the emulator (provider id kept)."""
    return config.provider(case.provider, base_url=emu.base_url, model=case.model, **changes)


def exact_json(value: Any) -> bytes:
    """A parsed wire value back to bytes, keys in the order received: key order inside opaque
    values is part of what must replay unchanged, so it is never normalized away."""
    return orjson.dumps(value)


def assistants(body: Any) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m.get("role") == "assistant"]


def carrier_keys(message: dict[str, Any]) -> frozenset[str]:
    """Every key of an assistant wire message beyond role/content/tool_calls."""
    return frozenset(message) - PLAIN_ASSISTANT_KEYS


def first_user_text(received: Received) -> str:
    body = received.body
    if not isinstance(body, dict):
        return ""
    for message in body.get("messages") or ():
        if message.get("role") == "user":
            return str(message.get("content"))
    return ""


def chat_requests(emu: ChatEmulator, start: int = 0) -> list[Received]:
    return [r for r in emu.received[start:] if r.path.endswith("/chat/completions")]


def requests_of(emu: ChatEmulator, marker: str, start: int = 0) -> list[Received]:
    """The chat requests whose first user message starts with ``marker`` (one conversation)."""
    return [r for r in chat_requests(emu, start) if first_user_text(r).startswith(marker)]


# --- conversations ------------------------------------------------------------------------------


@dataclass(slots=True)
class SentTurn:
    """One ``Session.send``: its answer, and the opaque values the emulator issued answering it."""

    done: Done
    issued: frozenset[str]
    received_after: int  # len(emu.received) once the turn was answered


@dataclass(slots=True)
class Conversation:
    session: Session
    marker: str
    turns: list[SentTurn] = field(default_factory=list)


async def send(conversation: Conversation, emu: ChatEmulator,
               turn: str | Sequence[ToolResult], *, stream: bool) -> Done:
    before = set(emu.issued)
    done = await conversation.session.send(turn, TurnOptions(stream=stream))
    conversation.turns.append(SentTurn(done=done, issued=frozenset(set(emu.issued) - before),
                                       received_after=len(emu.received)))
    return done


def question(marker: str, i: int) -> str:
    return f"{marker} Question {i}: what is the weather in city number {i}?"


async def tool_loop(conversation: Conversation, emu: ChatEmulator, i: int, *,
                    stream: bool) -> None:
    """User question → tool call → tool result → answer (the emulator's scripted loop)."""
    done = await send(conversation, emu, question(conversation.marker, i), stream=stream)
    calls = done.message.tool_calls
    assert calls, f"turn {i}: the emulator was expected to call the tool"
    # The tag keeps answers (and the values an emulator signs them with) unique per conversation.
    tag = hashlib.sha256(conversation.marker.encode()).hexdigest()[:8]
    results = [ToolResult(call_id=c.id, content=f"sunny, {20 + i} degrees (report {tag})")
               for c in calls]
    done = await send(conversation, emu, results, stream=stream)
    assert not done.message.tool_calls and done.message.text, f"turn {i}: expected an answer"


async def three_turn_conversation(store: Any, prov: ProviderConfig, emu: ChatEmulator,
                                  marker: str, *, stream: bool, **kwargs: Any) -> Conversation:
    session = Session.create(store, prov, tools=TOOLS, title=marker, **kwargs)
    conversation = Conversation(session=session, marker=marker)
    for i in range(3):
        await tool_loop(conversation, emu, i, stream=stream)
    return conversation


def stored_dumps(home: Path, session_id: str) -> list[bytes]:
    """The session's history as loaded by a fresh store, one canonical JSON per message."""
    store = open_store(None, home)
    try:
        return [dumps(m.message) for m in store.load_history(session_id).messages]
    finally:
        store.close()


# --- another process ----------------------------------------------------------------------------


def run_worker(jobs: Iterable[dict[str, Any]], *, processes: int = 1,
               timeout: float = 90.0) -> list[dict[str, Any]]:
    """Run ``session_worker.py`` in fresh interpreters (jobs split between ``processes`` running
    side by side); one result object per job."""
    pending = list(jobs)
    chunks = [pending[i::processes] for i in range(processes) if pending[i::processes]]

    def one(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
        proc = subprocess.run([sys.executable, str(WORKER)], input=json.dumps(chunk),
                              capture_output=True, text=True, timeout=timeout, check=False)
        assert proc.returncode == 0, f"worker failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        return [line["result"] for line in lines if "result" in line]

    with ThreadPoolExecutor(max_workers=len(chunks) or 1) as pool:
        return [result for results in pool.map(one, chunks) for result in results]


def start_worker(jobs: Iterable[dict[str, Any]]) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(list(jobs)))
    proc.stdin.close()
    return proc


# --- the raw database ---------------------------------------------------------------------------


def raw_db(home: Path) -> sqlite3.Connection:
    return sqlite3.connect(home / "state.db", isolation_level=None)


def integrity(home: Path) -> list[tuple[Any, ...]]:
    conn = raw_db(home)
    try:
        return conn.execute("PRAGMA integrity_check").fetchall()
    finally:
        conn.close()


def table_rows(home: Path, table: str) -> set[tuple[Any, ...]]:
    conn = raw_db(home)
    try:
        return set(conn.execute(f"SELECT * FROM {table}").fetchall())
    finally:
        conn.close()
