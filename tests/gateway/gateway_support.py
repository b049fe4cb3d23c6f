"""Helpers for the gateway tests: a gateway in-process or as a real ``thoughtline serve`` process,
and an agent that runs a tool loop through the official ``openai`` SDK and strips reasoning.

Owns conveniences only; expectations stay in the tests.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai

from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import GatewayConfig, parse
from thoughtline.requestlog import RequestLog
from thoughtline.store import SQLiteStore
from thoughtline.testing.loopback import LoopbackServer

UPSTREAM_KEY_ENV = "TL_GATEWAY_TEST_UPSTREAM_KEY"
UPSTREAM_KEY = "sk-upstream-secret-d5e8a1f0c3"
MODEL = "ds/deepseek-v4-pro"
TOOLS = [{"type": "function", "function": {
    "name": "weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
SESSION_HEADER = "X-Thoughtline-Session"
ANNOUNCE = re.compile(r"listening on (http://\S+)")


def gateway_toml(emu: Any, *, tokens_env: str = "TL_GATEWAY_TEST_TOKENS",
                 max_body: int | None = None, extra_server: str = "", name: str = "ds",
                 provider: str = "deepseek", model: str = "deepseek-v4-pro") -> str:
    """A gateway.toml with one upstream (by default DeepSeek, the emulator's base URL)."""
    limit = f"max_body_bytes = {max_body}\n" if max_body else ""
    base_url = getattr(emu, "base_url", None) or emu.endpoint_url  # Bedrock: botocore's URL
    return (f'[server]\nhost = "127.0.0.1"\nport = 0\ntokens_env = "{tokens_env}"\n{limit}'
            f'{extra_server}\n'
            f'[[upstream]]\nname = "{name}"\nprovider = "{provider}"\n'
            f'base_url = "{base_url}"\napi_key_env = "{UPSTREAM_KEY_ENV}"\n'
            f'models = ["{model}"]\n')


@dataclass
class RunningGateway:
    server: LoopbackServer
    gateway: Gateway
    store: SQLiteStore
    config: GatewayConfig

    @property
    def base_url(self) -> str:
        return self.server.origin + "/v1"

    def client(self, token: str = "none", **kwargs: Any) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.base_url, api_key=token, max_retries=0, **kwargs)

    def async_client(self, token: str = "none", **kwargs: Any) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=self.base_url, api_key=token, max_retries=0,
                                  **kwargs)


@contextmanager
def running_gateway(emu: Any, tmp: Path, *, tokens: Sequence[str] = (),
                    max_body: int | None = None, access_log: str = "",
                    logs: Path | None = None, extra_server: str = "",
                    **upstream: str) -> Iterator[RunningGateway]:
    import tomllib

    environ = {"TL_GATEWAY_TEST_TOKENS": ",".join(tokens)}
    extra = (f'access_log = "{access_log}"\n' if access_log else "") + extra_server
    config = parse(tomllib.loads(gateway_toml(emu, max_body=max_body, extra_server=extra,
                                              **upstream)))
    store = SQLiteStore(tmp / "state.db")
    gateway = Gateway(config, store, environ=environ, request_log=RequestLog(logs or tmp / "logs"))
    server = LoopbackServer(create_app(gateway), name="gateway").start()
    try:
        yield RunningGateway(server=server, gateway=gateway, store=store, config=config)
    finally:
        server.stop()
        store.close()


# --- an agent that forgets reasoning ------------------------------------------------------------


def tool_output(arguments: str) -> str:
    """What the agent's weather tool answers (deterministic)."""
    return f"Sunny, 21 °C ({len(arguments)} bytes asked)"


@dataclass
class StrippingAgent:
    """Runs a tool loop with the SDK; keeps only role/content/tool_calls of each answer."""

    client: openai.OpenAI
    messages: list[dict[str, Any]] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)  # what each answer showed, in order
    session: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    model: str = MODEL

    def ask(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def step(self, *, stream: bool) -> dict[str, Any]:
        """One request; appends the stripped answer (and a tool result when it called one)."""
        answer = self._stream() if stream else self._whole()
        self.messages.append(answer)
        for call in answer.get("tool_calls") or ():
            self.messages.append({"role": "tool", "tool_call_id": call["id"],
                                  "content": tool_output(call["function"]["arguments"])})
        return answer

    def _whole(self) -> dict[str, Any]:
        raw = self.client.chat.completions.with_raw_response.create(
            model=self.model, messages=self.messages, tools=TOOLS, extra_headers=self.headers)
        self.session = raw.headers.get(SESSION_HEADER, "")
        message = raw.parse().choices[0].message
        self.reasoning.append((message.model_extra or {}).get("reasoning_content", ""))
        answer: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            answer["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.function.name, "arguments": c.function.arguments}}
                for c in message.tool_calls]
        return answer

    def _stream(self) -> dict[str, Any]:
        with self.client.chat.completions.with_streaming_response.create(
                model=self.model, messages=self.messages, tools=TOOLS, stream=True,
                stream_options={"include_usage": True}, extra_headers=self.headers) as raw:
            self.session = raw.headers.get(SESSION_HEADER, "")
            chunks = list(raw.parse())
        text, thought = [], []
        calls: dict[int, dict[str, Any]] = {}
        for chunk in chunks:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            thought.append((delta.model_extra or {}).get("reasoning_content") or "")
            text.append(delta.content or "")
            for call in delta.tool_calls or ():
                entry = calls.setdefault(call.index, {"id": "", "type": "function",
                                                      "function": {"name": "", "arguments": ""}})
                entry["id"] = call.id or entry["id"]
                if call.function is not None:
                    entry["function"]["name"] += call.function.name or ""
                    entry["function"]["arguments"] += call.function.arguments or ""
        self.reasoning.append("".join(thought))
        answer: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
        if calls:
            answer["tool_calls"] = [calls[i] for i in sorted(calls)]
        return answer


# --- a real ``thoughtline serve`` process -------------------------------------------------------


@dataclass
class ServeProcess:
    process: subprocess.Popen[str]
    base_url: str
    stderr: list[str]  # the access log's JSON lines (and any error), as read so far
    stdout: list[str] = field(default_factory=list)  # the start and stop banners
    readers: list[threading.Thread] = field(default_factory=list)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self._drained()

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(30)
        self._drained()
        return code

    def _drained(self) -> None:
        """Wait (bounded) until everything the process wrote was read."""
        for reader in self.readers:
            reader.join(10)


def _drain(stream: Any, lines: list[str], found: threading.Event | None = None,
           url: list[str] | None = None) -> None:
    for line in stream:
        lines.append(line)
        match = ANNOUNCE.search(line) if url is not None else None
        if match and url is not None and not url:
            url.append(match.group(1))
            assert found is not None
            found.set()
    if found is not None:
        found.set()


def start_serve(config: Path, home: Path, env: Mapping[str, str],
                *args: str) -> ServeProcess:
    """Run ``thoughtline serve --config CONFIG [ARGS]`` and wait for its listening line."""
    argv = [sys.executable, "-c", "from thoughtline.cli.main import main; main()",
            "--home", str(home), "serve", "--config", str(config), "--port", "0", *args]
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **env})
    assert process.stderr is not None and process.stdout is not None
    lines: list[str] = []
    banners: list[str] = []
    found = threading.Event()
    url: list[str] = []
    readers = [threading.Thread(target=_drain, args=(process.stdout, banners, found, url),
                                daemon=True),
               threading.Thread(target=_drain, args=(process.stderr, lines), daemon=True)]
    for reader in readers:
        reader.start()
    found.wait(60)
    if not url:
        process.kill()
        raise AssertionError("thoughtline serve did not start:\n" + "".join(banners + lines))
    return ServeProcess(process=process, base_url=url[0] + "/v1", stderr=lines,
                        stdout=banners, readers=readers)
