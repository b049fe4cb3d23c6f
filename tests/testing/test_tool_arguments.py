"""Issue 31 item 9: an emulated tool call follows the schema the tool was offered with.

Each emulator runs as ``python -m thoughtline.testing NAME`` (its real entry point) and is offered
one tool whose schema an agent made from a pydantic model — required and optional fields, an
enum, bounds, a nested object behind ``$ref``, a list, a format. Its tool call must pass the
agent's own validation (``model_validate`` with extra fields forbidden), as it did not when the
Anthropic emulator always sent ``{"query", "n"}``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any, Literal

import httpx
import orjson
import pytest
from pydantic import BaseModel, ConfigDict, Field

MAIN = [sys.executable, "-m", "thoughtline.testing"]
PROMPT = "Plan a week in Lisbon"


class Place(BaseModel):
    model_config = ConfigDict(extra="forbid")
    city: str = Field(min_length=2)
    country_code: str = Field(max_length=2)


class Forecast(BaseModel):
    model_config = ConfigDict(extra="forbid")
    place: Place
    days: int = Field(ge=3, le=14)
    units: Literal["metric", "imperial"]
    hourly: bool
    start: date
    tags: list[str] = Field(min_length=1)
    note: str | None = None
    score: float = Field(default=0.5, gt=0, lt=1)


SCHEMA = Forecast.model_json_schema()


@contextmanager
def emulator(name: str) -> Iterator[str]:
    proc = subprocess.Popen([*MAIN, name, "--no-auth"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        assert proc.wait(timeout=20) == 0


def _chat(url: str) -> Any:
    body = {"model": "deepseek-reasoner", "messages": [{"role": "user", "content": PROMPT}],
            "tools": [{"type": "function", "function": {"name": "forecast",
                                                        "parameters": SCHEMA}}]}
    message = _post(f"{url}/chat/completions", body)["choices"][0]["message"]
    return orjson.loads(message["tool_calls"][0]["function"]["arguments"])


def _responses(url: str) -> Any:
    body = {"model": "gpt-5.5", "store": False, "input": [{"role": "user", "content": PROMPT}],
            "tools": [{"type": "function", "name": "forecast", "parameters": SCHEMA}]}
    [call] = [i for i in _post(f"{url}/responses", body)["output"]
              if i["type"] == "function_call"]
    return orjson.loads(call["arguments"])


def _anthropic(url: str) -> Any:
    body = {"model": "claude-opus-4-5", "max_tokens": 2048,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": [{"role": "user", "content": PROMPT}],
            "tools": [{"name": "forecast", "input_schema": SCHEMA}]}
    [call] = [b for b in _post(f"{url}/v1/messages", body)["content"] if b["type"] == "tool_use"]
    return call["input"]


def _gemini(url: str) -> Any:
    body = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
            "tools": [{"functionDeclarations": [{"name": "forecast",
                                                 "parametersJsonSchema": SCHEMA}]}]}
    parts = _post(f"{url}/models/gemini-3-pro-preview:generateContent", body)[
        "candidates"][0]["content"]["parts"]
    [call] = [p["functionCall"] for p in parts if "functionCall" in p]
    return call["args"]


def _bedrock(url: str) -> Any:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    body = orjson.dumps({"messages": [{"role": "user", "content": [{"text": PROMPT}]}],
                         "toolConfig": {"tools": [{"toolSpec": {
                             "name": "forecast", "inputSchema": {"json": SCHEMA}}}]}})
    request = AWSRequest(method="POST", url=f"{url}/model/{model}/converse", data=body,
                         headers={"content-type": "application/json"})
    SigV4Auth(Credentials("AKIAEMULATORTEST0000", "not-a-real-key"), "bedrock",
              "us-east-1").add_auth(request)
    response = httpx.post(request.url, content=body, headers=dict(request.headers), timeout=20)
    assert response.status_code == 200, response.text
    content = response.json()["output"]["message"]["content"]
    [call] = [b["toolUse"] for b in content if "toolUse" in b]
    return call["input"]


def _post(url: str, body: dict[str, Any]) -> Any:
    response = httpx.post(url, json=body, timeout=20, headers={"anthropic-version": "2023-06-01"})
    assert response.status_code == 200, response.text
    return response.json()


CALLERS: dict[str, Callable[[str], Any]] = {
    "deepseek": _chat, "responses": _responses, "anthropic": _anthropic, "gemini": _gemini,
    "bedrock": _bedrock}


@pytest.mark.parametrize("name", list(CALLERS))
def test_each_emulator_calls_a_tool_with_arguments_its_schema_accepts(name: str) -> None:
    with emulator(name) as url:
        args = CALLERS[name](url)
    parsed = Forecast.model_validate(args)  # the agent's own validation: raises if not
    assert set(args) >= {"place", "days", "units", "hourly", "start", "tags"}  # every required
    assert 3 <= parsed.days <= 14 and 0 < parsed.score < 1


def test_an_open_schema_still_gets_the_emulators_own_arguments() -> None:
    """``{"type": "object"}`` accepts anything: the Anthropic emulator keeps its {query, n}."""
    body = {"model": "claude-opus-4-5", "max_tokens": 2048,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": [{"role": "user", "content": PROMPT}],
            "tools": [{"name": "lookup", "input_schema": {"type": "object"}}]}
    with emulator("anthropic") as url:
        [call] = [b for b in _post(f"{url}/v1/messages", body)["content"]
                  if b["type"] == "tool_use"]
    assert set(call["input"]) == {"query", "n"} and call["input"]["query"] == PROMPT


def _gemini_steps(url: str, prompt: str, tools: list[dict[str, Any]]) -> list[list[str]]:
    """The calls of each step of a tool loop (answering every call), until a text answer."""
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": prompt}]}]
    steps: list[list[str]] = []
    for _ in range(4):
        body = {"contents": contents, "tools": [{"functionDeclarations": tools}]}
        content = _post(f"{url}/models/gemini-3-pro-preview:generateContent", body)[
            "candidates"][0]["content"]
        calls = [p["functionCall"] for p in content["parts"] if "functionCall" in p]
        if not calls:
            return steps
        steps.append([c["name"] for c in calls])
        contents += [content, {"role": "user", "parts": [
            {"functionResponse": {"name": c["name"], "response": {"ok": True}}} for c in calls]}]
    return steps


def test_gemini_chains_a_second_call_only_where_another_tool_and_the_word_ask_for_it() -> None:
    weather = {"name": "weather", "parametersJsonSchema": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    clock = {"name": "clock", "parameters": {"type": "OBJECT", "properties": {
        "zone": {"type": "STRING", "enum": ["UTC", "CET"]}}}}
    with emulator("gemini") as url:
        assert _gemini_steps(url, "chain: weather then time in Lima",
                             [weather, clock]) == [["weather"], ["clock"]]
        # One tool offered: nothing to chain to, so the result is answered (it called the
        # same tool a second time before).
        assert _gemini_steps(url, "chain: weather in Lima", [weather]) == [["weather"]]
        # "blockchain" is not a request for a chain.
        assert _gemini_steps(url, "weather for the blockchain meetup",
                             [weather, clock]) == [["weather"]]
