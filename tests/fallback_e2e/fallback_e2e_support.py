"""Helpers for the learn-once fallback end-to-end tests (tests/fallback_e2e/).

Owns test conveniences only: driving a ``Session`` one turn at a time against a loopback emulator,
reading which reasoning carriers went on the wire, the stored form of a history, the real
``thoughtline`` entry point in a throwaway home, and provider rejection bodies as providers send
them (public threads: tests/fixtures/SOURCES.md, category 7). Expectations stay in the tests.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from thoughtline import messages
from thoughtline.config import ProviderConfig
from thoughtline.errors import ProviderError
from thoughtline.events import Done, Event, Notice
from thoughtline.messages import Message, ToolResult, ToolSpec
from thoughtline.requestlog import RequestLog
from thoughtline.session import Session, TurnOptions
from thoughtline.store import Store, open_store
from thoughtline.testing import ChatEmulator, Received
from thoughtline.transport import HttpTransport, TransportConfig

RC, R, RD = "reasoning_content", "reasoning", "reasoning_details"
CARRIERS = frozenset({RC, R, RD})
PAD = " "

LOOKUP = ToolSpec(name="lookup", description="Look a fact up.",
                  parameters={"type": "object", "properties": {"query": {"type": "string"}},
                              "required": ["query"]})

# --- provider rejection bodies, as the provider sends them -------------------------------------

GROQ_RC = {"error": {"message": "'messages.1' : for 'role:assistant' the following must be "
                                "satisfied[('messages.1' : property 'reasoning_content' is "
                                "unsupported)]", "type": "invalid_request_error"}}
GROQ_R = {"error": {"message": "'messages.1' : for 'role:assistant' the following must be "
                               "satisfied[('messages.1' : property 'reasoning' is unsupported)]",
                    "type": "invalid_request_error"}}
CEREBRAS_RC = {"message": "messages.2.assistant.reasoning_content: property "
                          "'messages.2.assistant.reasoning_content' is unsupported",
               "type": "invalid_request_error", "param": "validation_error",
               "code": "wrong_api_format"}
MISTRAL_RC = {"object": "error", "message": {"detail": [
    {"type": "extra_forbidden", "loc": ["body", "messages", 2, "assistant", "reasoning_content"],
     "msg": "Extra inputs are not permitted", "input": "…"}]},
    "type": "invalid_request_message_error", "param": None, "code": None}
RELAY_RD = {"error": {"message": "Extra inputs are not permitted, field: "
                                 "'messages[1].reasoning_details'",
                      "type": "invalid_request_error"}}
UNKNOWN_FIELD_RD = {"error": {"message": 'json: unknown field "reasoning_details"'}}
UNKNOWN_KEY_RD = {"error": {"message": "unknown key 'reasoning_details' in messages[2]"}}
NO_SUCH_FIELD_RC = {"error": {"message": "no such field: messages[3].reasoning_content"}}
UNKNOWN_FIELD_RC = {"error": {"message": "unknown field `reasoning_content` in messages[1]"}}
UNRECOGNIZED_RC = {"error": {"message": "Unrecognized request argument supplied: "
                                        "messages[1].reasoning_content",
                             "type": "invalid_request_error"}}
UNKNOWN_PARAMETER_RC = {"error": {"message": "Unknown parameter: 'messages[1].reasoning_content'.",
                                  "type": "invalid_request_error",
                                  "code": "unknown_parameter"}}
UNEXPECTED_FIELD_R = {"error": {"message": 'unexpected field "messages.1.reasoning"'}}
ADDITIONAL_PROPERTIES_RC = {"error": {"message": "messages/1: additional properties are not "
                                                 "allowed ('reasoning_content' was unexpected)"}}
DEEPSEEK_PASS_BACK = {"error": {"message": "The `reasoning_content` in the thinking mode must be "
                                           "passed back to the API.",
                                "type": "invalid_request_error", "param": None,
                                "code": "invalid_request_error"}}
DEEPSEEK_MISSING = {"error": {"message": "Missing `reasoning_content` field in the assistant "
                                         "message at message index 2.",
                              "type": "invalid_request_error", "param": None,
                              "code": "invalid_request_error"}}
KIMI_MISSING = {"error": {"message": "thinking is enabled but reasoning_content is missing in "
                                     "assistant tool call message at index 7",
                          "type": "invalid_request_error"}}
DEEPSEEK_ANTHROPIC = {"type": "error", "error": {
    "type": "invalid_request_error",
    "message": "The `content[].thinking` in the thinking mode must be passed back to the API."}}
# Not rejections of a carrier: a generic gateway error, a value error, a top-level parameter.
GENERIC_PROVIDER_ERROR = {"error": {"message": "Provider returned error", "code": 400}}
TEMPERATURE = {"error": {"message": "Invalid value for 'temperature': must be between 0 and 2.",
                         "type": "invalid_request_error", "param": "temperature"}}
TOP_LEVEL_REASONING = {"error": {"message": "Unknown parameter: 'reasoning'.",
                                 "type": "invalid_request_error", "code": "unknown_parameter"}}

#: Every real body above; together they exercise every row of ``fallback.WORDINGS``.
REAL_BODIES: tuple[Any, ...] = (
    GROQ_RC, GROQ_R, CEREBRAS_RC, MISTRAL_RC, RELAY_RD, UNKNOWN_FIELD_RD, UNKNOWN_KEY_RD,
    NO_SUCH_FIELD_RC, UNKNOWN_FIELD_RC, UNRECOGNIZED_RC, UNKNOWN_PARAMETER_RC, UNEXPECTED_FIELD_R,
    ADDITIONAL_PROPERTIES_RC, DEEPSEEK_PASS_BACK, DEEPSEEK_MISSING, KIMI_MISSING,
    DEEPSEEK_ANTHROPIC, GENERIC_PROVIDER_ERROR, TEMPERATURE, TOP_LEVEL_REASONING,
)


def body_text(body: Any) -> str:
    """The response text the emulator sends for an injected ``body`` (its compact JSON)."""
    return orjson.dumps(body).decode()


# --- sessions, one turn at a time -----------------------------------------------------------------


@dataclass
class Outcome:
    """Everything one turn produced: its events, and the provider error it ended with (if any)."""

    events: list[Event] = field(default_factory=list)
    error: ProviderError | None = None

    @property
    def notices(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, Notice)]

    @property
    def done(self) -> Done:
        found = [e for e in self.events if isinstance(e, Done)]
        assert len(found) == 1, (found, self.error)
        return found[0]


@functools.cache
def _tls() -> ssl.SSLContext:
    return ssl.create_default_context()


def transport(config: TransportConfig | None = None) -> HttpTransport:
    """A transport whose client reuses one TLS context (building one costs ~0.1 s each time)."""
    client = httpx.AsyncClient(timeout=httpx.Timeout(60.0), verify=_tls())
    return HttpTransport(config, client=client)


def create(store: Store, provider: ProviderConfig, **kwargs: Any) -> Session:
    """``Session.create`` on a cheap transport (``send`` gives every turn a fresh one anyway)."""
    return Session.create(store, provider, transport=transport(), **kwargs)


def resume(store: Store, ref: str, **kwargs: Any) -> Session:
    """``Session.resume`` on a cheap transport."""
    return Session.resume(store, ref, transport=transport(), **kwargs)


def send(session: Session, turn: str | Message | Sequence[ToolResult], *,
         config: TransportConfig | None = None, stream: bool = True,
         requests: int = 2) -> Outcome:
    """Send one turn on a fresh transport; a ``ProviderError`` is returned, not raised."""

    async def go() -> Outcome:
        session.transport = transport(config)
        outcome = Outcome()
        try:
            async for event in session.stream(turn, TurnOptions(stream=stream,
                                                                requests=requests)):
                outcome.events.append(event)
        except ProviderError as error:
            outcome.error = error
        finally:
            await session.transport.aclose()
        return outcome

    return asyncio.run(go())


def answer_call(session: Session, result: str = "42") -> list[ToolResult]:
    """Tool results answering every call of the session's last (assistant) turn."""
    last = session.history[-1]
    assert last.role == "assistant" and last.tool_calls, last
    return [ToolResult(call_id=c.id, content=result) for c in last.tool_calls]


def provider_at(emu: ChatEmulator, provider_id: str = "custom",
                model: str = "relay-model") -> ProviderConfig:
    """A provider with no key (loopback endpoints need none) pointed at ``emu``."""
    return ProviderConfig(id=provider_id, base_url=emu.base_url, model=model)


def store_at(home: Path) -> Store:
    """The SQLite store of ``home`` (what the CLI opens there), never a database URL."""
    home.mkdir(parents=True, exist_ok=True)
    return open_store(home / "state.db", home)


def request_log(home: Path) -> RequestLog:
    return RequestLog(home / "logs")


def stored(store: Store, session_id: str) -> list[bytes]:
    """The session's history exactly as stored (lossless JSON of every message)."""
    return [messages.dumps(m.message) for m in store.load_history(session_id).messages]


# --- the wire ----------------------------------------------------------------------------------


def assistants(received: Received) -> list[dict[str, Any]]:
    return [m for m in received.body["messages"] if m.get("role") == "assistant"]


def carried(received: Received) -> list[frozenset[str]]:
    """The carrier keys present on each assistant message of one request."""
    return [frozenset(m) & CARRIERS for m in assistants(received)]


def any_carrier(received: Received) -> frozenset[str]:
    return frozenset().union(*carried(received))


def statuses(received: Sequence[Received]) -> list[int]:
    return [r.status for r in received]


def chat_requests(emu: ChatEmulator) -> list[Received]:
    return [r for r in emu.received if r.path.endswith("/chat/completions")]


# --- the real CLI --------------------------------------------------------------------------------

_SCRIPT = Path(sys.executable).with_name("thoughtline")
ENTRY = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "thoughtline.cli.main"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("THOUGHTLINE_") and "proxy" not in k.lower()}
    env.update(NO_COLOR="1", COLUMNS="200")
    return env


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``thoughtline --home HOME ARGS…`` in a new process; stdin is empty (never a terminal)."""
    return subprocess.run([*ENTRY, "--home", str(home), *args], capture_output=True, text=True,
                          env=_env(), stdin=subprocess.DEVNULL, timeout=60, check=False)


def cli_ok(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = cli(home, *args)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result


def cli_read(home: Path, *commands: Sequence[str]) -> list[str]:
    """Run read-only commands side by side (each a new process); their stdout, in order."""
    running = [(args, subprocess.Popen([*ENTRY, "--home", str(home), *args], text=True,
                                       env=_env(), stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE))
               for args in commands]
    outputs = []
    for args, process in running:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, (args, out, err)
        outputs.append(out)
    return outputs


def write_config(home: Path, base_url: str, *, name: str = "relay",
                 model: str = "relay-model") -> None:
    """A config.toml naming one custom provider at ``base_url`` (no preset, no key)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[providers.{name}]\nbase_url = "{base_url}"\nmodel = "{model}"\n', "utf-8")
