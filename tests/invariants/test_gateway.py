"""The gateway, through a real HTTP client (the ``openai`` SDK) against the DeepSeek emulator.

Rehydration: a stored turn found by its tool-call id goes back in the client's place only when it
shows exactly what the client sent (same text, same call names and arguments); one found by its
place or content only when its visible content is identical. Otherwise the client's own message
is used as sent — never a stored turn the client did not show.

Secrets: no gateway token, and no prefix of one, lands in the store, the access log or the
request log (a tenant is known by a digest); neither does the upstream key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.gateway_support import (
    MODEL,
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    StrippingAgent,
    running_gateway,
)
from thoughtline.testing import ChatEmulator


@pytest.fixture
def deepseek(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
    with ChatEmulator("deepseek") as emu:
        yield emu


def _assistants(body: Any) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


@pytest.mark.parametrize("edit", [False, True])
def test_a_turn_found_by_its_call_id_is_put_back_only_when_the_client_shows_it(
        deepseek: ChatEmulator, tmp_path: Path, edit: bool) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        agent = StrippingAgent(gw.client())
        agent.ask("What's the weather in Paris?")
        answer = agent.step(stream=False)
        [call] = answer["tool_calls"]
        shown = agent.reasoning[-1]
        assert shown
        if edit:  # the client changed the call's arguments but kept its id
            call["function"]["arguments"] = orjson.dumps({"city": "Lyon"}).decode()
        agent.step(stream=False)
    [sent] = _assistants(deepseek.received[-1].body)[:1]
    assert sent["tool_calls"][0]["id"] == call["id"]
    if edit:  # the client's own message, as sent: its arguments, not the stored reasoning
        assert sent["tool_calls"][0]["function"]["arguments"] == call["function"]["arguments"]
        assert sent.get("reasoning_content") != shown
    else:  # the stored turn: its reasoning back, byte for byte
        assert sent["reasoning_content"] == shown


@pytest.mark.parametrize("edit", [False, True])
def test_a_turn_found_by_its_content_is_put_back_only_when_identical(
        deepseek: ChatEmulator, tmp_path: Path, edit: bool) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        client = gw.client()
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Hello there"}]
        whole = client.chat.completions.create(model=MODEL, messages=messages)  # no tools
        text = whole.choices[0].message.content
        shown = whole.choices[0].message.model_extra["reasoning_content"]
        assert text and shown
        messages += [{"role": "assistant", "content": text + " (edited)" if edit else text},
                     {"role": "user", "content": "And then?"}]
        client.chat.completions.create(model=MODEL, messages=messages)
    [sent] = _assistants(deepseek.received[-1].body)
    if edit:
        assert sent["content"] == text + " (edited)" and sent.get("reasoning_content") != shown
    else:
        assert sent["content"] == text and sent["reasoning_content"] == shown


TOKEN = "tlgw-7Qx9Zr2KpLm4Vb8NcW5s"


def test_no_token_or_prefix_of_one_reaches_the_store_or_the_logs(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    access = tmp_path / "access.log"
    with running_gateway(deepseek, tmp_path, tokens=[TOKEN], access_log=str(access)) as gw:
        agent = StrippingAgent(gw.client(TOKEN))
        agent.ask("What's the weather in Paris?")
        agent.step(stream=False)
        agent.step(stream=True)
        assert agent.session
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert access in written and any(p.suffix == ".db" for p in written)
    assert any("logs" in p.parts for p in written)  # the request log was written too
    for path in written:
        data = path.read_bytes()
        for size in range(6, len(TOKEN) + 1):
            assert TOKEN[:size].encode() not in data, (path.name, size)
        assert UPSTREAM_KEY.encode() not in data, path.name


def test_a_turn_found_by_its_place_is_put_back_only_with_the_same_call_ids(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    # The client resends the call without its id (same name and arguments, same place): the
    # stored turn is found by its place, but it is not what the client shows (its call has an
    # id), so the client's own message goes up as sent.
    with running_gateway(deepseek, tmp_path) as gw:
        agent = StrippingAgent(gw.client())
        agent.ask("What's the weather in Paris?")
        answer = agent.step(stream=False)
        shown = agent.reasoning[-1]
        [call] = answer["tool_calls"]
        stored_id = call["id"]
        call["id"] = ""
        agent.messages[-1]["tool_call_id"] = ""
        agent.step(stream=False)
    requests = [r for r in deepseek.received if len(_assistants(r.body)) == 1]
    assert requests
    for request in requests:
        [sent] = _assistants(request.body)
        assert stored_id not in orjson.dumps(sent).decode()
        assert sent.get("reasoning_content") != shown
