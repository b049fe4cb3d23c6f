"""A client's failed tool result reaches every upstream as a failure (issue 47 item 1).

An agent on the official ``anthropic`` SDK answers a tool call through the gateway's
``/v1/messages`` face with ``"is_error": true`` (Anthropic's documented error form,
https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use). The face reads
it into the canonical result, and each upstream's emulator must receive that API's own error form
(``tests/codecs/test_tool_error_wire.py`` lists them); the same step answered without the flag
must arrive as a success. Read from the bytes each emulator received.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from messages_support import MessagesAgent, messages_client
from test_gateway_messages import serving
from test_gateway_replay import AWS_KEYS, UPSTREAMS, Upstream

FAILED = "weather service unreachable: connection refused"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEYS[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_KEYS[1])
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws/config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws/credentials")


def _result_on_the_wire(name: str, body: Any) -> tuple[str, bool]:
    """(the result's text, whether the API was told it failed) in ``name``'s request body."""
    if name == "anthropic":
        [block] = [b for m in body["messages"] if isinstance(m["content"], list)
                   for b in m["content"] if b["type"] == "tool_result"]
        content = block["content"]
        text = content if isinstance(content, str) else "".join(c["text"] for c in content)
        return text, block.get("is_error") is True
    if name == "gemini":
        [found] = [p["functionResponse"]["response"] for c in body["contents"]
                   for p in c["parts"] if "functionResponse" in p]
        return (found["error"], True) if "error" in found else (found["output"], False)
    if name == "bedrock":
        [found] = [b["toolResult"] for m in body["messages"] for b in m["content"]
                   if "toolResult" in b]
        return found["content"][0]["text"], found["status"] == "error"
    if name == "openai-responses":
        [item] = [i for i in body["input"] if i.get("type") == "function_call_output"]
        return item["output"], False  # no error flag in this API: the text is all it carries
    [message] = [m for m in body["messages"] if m["role"] == "tool"]
    return message["content"], False  # Chat Completions: likewise


@pytest.mark.parametrize("failed", [True, False])
@pytest.mark.parametrize("name", sorted(UPSTREAMS))
def test_a_failed_tool_result_reaches_every_upstream_as_a_failure(
        tmp_path: Path, name: str, failed: bool, aws: None) -> None:
    upstream: Upstream = UPSTREAMS[name]
    with upstream.emulator() as emu, serving(emu, tmp_path, provider=upstream.provider,
                                             model=upstream.model) as (origin, _):
        agent = MessagesAgent(messages_client(origin), model=f"up/{upstream.model}")
        agent.ask("What's the weather in Paris?")
        assert any(b["type"] == "tool_use" for b in agent.step(stream=False))
        results = agent.messages[-1]["content"]
        agent.messages[-1] = {"role": "user", "content": [
            {**r, "content": FAILED, **({"is_error": True} if failed else {})} for r in results]}
        agent.step(stream=False)
        received = emu.received[-1]
        assert received.status == 200
        body = orjson.loads(received.raw)
    text, told = _result_on_the_wire(name, body)
    assert text == FAILED
    carries_flag = name in ("anthropic", "gemini", "bedrock")
    assert told is (failed and carries_flag)
