"""Values only their issuer reads, through the gateway (issue 43 items 2 and 5).

An Anthropic ``compaction`` block goes back to the Anthropic upstream that made it byte for
byte, in place, also after a gateway restart on the same store; any other upstream gets its
summary as text where the block was, never the block. A Codex multi-agent ``agent_message``
goes verbatim to OpenAI's own Responses API only; a Chat upstream or another Responses server
gets what its recipient can read, as a user message, and never its ``encrypted_content``. The
next turn still finds its stored turn: nothing is sent twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gateway_support import RunningGateway, running_gateway
from test_gateway_claude_code import read_sse

from thoughtline.testing import ChatEmulator
from thoughtline.testing.anthropic_emulator import AnthropicEmulator
from thoughtline.testing.responses_emulator import ResponsesEmulator

TOKEN = "tok-sealed-items"
CLAUDE = "claude-opus-5"  # on-demand compaction (compaction-on-demand page)
SEALED = "gAAAAA-sealed-task-for-the-worker=="
AGENT_MESSAGE = {"type": "agent_message", "id": "am_0001", "author": "/root",
                 "recipient": "/root/worker", "content": [
                     {"type": "input_text", "text": "Count the files under src/."},
                     {"type": "encrypted_content", "encrypted_content": SEALED}]}
SAID = "Message from agent /root to /root/worker:\n\nCount the files under src/."


def post(gw: RunningGateway, path: str, body: dict[str, Any]) -> httpx.Response:
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json",
               "anthropic-version": "2023-06-01", "anthropic-beta": "compact-2026-09-04"}
    reply = httpx.post(gw.server.origin + path, content=orjson.dumps(body), headers=headers,
                       timeout=60)
    assert reply.status_code == 200, reply.text
    return reply


def ask(gw: RunningGateway, body: dict[str, Any], *, stream: bool) -> tuple[list[Any], str]:
    """A Messages request: the answer's blocks as the client assembles them, and its session."""
    reply = post(gw, "/v1/messages", {**body, "stream": stream})
    content = read_sse(reply.text) if stream else reply.json()["content"]
    return content, reply.headers["x-thoughtline-session"]


def log_lines(log: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in log.read_text().splitlines() if '"path"' in x]


# --- an Anthropic compaction block ---------------------------------------------------------------


def _compacted(gw: RunningGateway, stream: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """A conversation the Anthropic upstream compacted on demand: (the next body, the block)."""
    body = {"model": f"up/{CLAUDE}", "max_tokens": 4000,
            "messages": [{"role": "user", "content": "Plan a weekend in Oslo."}]}
    (block,), _ = ask(gw, {**body, "compaction": {"type": "on_demand"}}, stream=stream)
    assert block["type"] == "compaction" and block["content"]
    body["messages"] += [{"role": "assistant", "content": [block]},
                         {"role": "user", "content": "And the weather there?"}]
    return body, block


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_compaction_block_goes_to_its_issuer_verbatim_also_after_a_restart(
        tmp_path: Path, stream: bool) -> None:
    with AnthropicEmulator() as emu:
        with running_gateway(emu, tmp_path, tokens=(TOKEN,), name="up", provider="anthropic",
                             model=CLAUDE) as gw:
            body, block = _compacted(gw, stream)
            answer, _ = ask(gw, body, stream=stream)
        body["messages"] += [{"role": "assistant", "content": answer},
                             {"role": "user", "content": "Thanks!"}]
        with running_gateway(emu, tmp_path, tokens=(TOKEN,), name="up", provider="anthropic",
                             model=CLAUDE) as gw:  # the same store, a new process state
            ask(gw, body, stream=stream)
        received = list(emu.received)
    assert [r.status for r in received] == [200, 200, 200]
    for request in received[1:]:
        turn = request.body["messages"][1]
        assert turn == {"role": "assistant", "content": [block]}
        assert b'{"role":"assistant","content":[' + orjson.dumps(block) + b"]}" in request.raw


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_chat_upstream_gets_the_summary_in_place_and_finds_its_turn_again(
        deepseek: ChatEmulator, tmp_path: Path, stream: bool) -> None:
    with AnthropicEmulator() as emu, running_gateway(
            emu, tmp_path / "a", tokens=(TOKEN,), name="up", provider="anthropic",
            model=CLAUDE) as gw:
        body, block = _compacted(gw, stream)
    log = tmp_path / "access.log"
    body["model"] = "ds/deepseek-v4-pro"
    with running_gateway(deepseek, tmp_path, tokens=(TOKEN,), access_log=str(log)) as gw:
        shown, first = ask(gw, body, stream=stream)
        body["messages"] += [{"role": "assistant", "content": shown},
                             {"role": "user", "content": "Pack what?"}]
        _, second = ask(gw, body, stream=stream)
    sent = deepseek.received
    assert [r.status for r in sent] == [200, 200]
    assert second == first  # the same session
    for request in sent:
        turn = request.body["messages"][1]
        assert (turn["role"], turn["content"]) == ("assistant", block["content"])
        assert request.raw.count(orjson.dumps(block["content"])) == 1
        assert b"compaction" not in request.raw and block["signature"].encode() not in request.raw
    # the next turn found DeepSeek's answer in the store: its reasoning back, nothing twice
    (thought,) = [b["thinking"] for b in shown if b["type"] == "thinking"]
    (answer,) = [m for m in sent[1].body["messages"][2:] if m["role"] == "assistant"]
    assert answer["reasoning_content"] == thought
    assert len(sent[1].body["messages"]) == len(sent[0].body["messages"]) + 2
    lines = log_lines(log)
    assert lines[1]["rehydrated"] >= 1
    assert any("compaction blocks" in reason for reason in lines[0]["dropped"])


# --- a Codex agent_message -----------------------------------------------------------------------


def _child_input() -> list[dict[str, Any]]:
    """What Codex sends a spawned child: its instructions, then the parent's task for it."""
    return [{"type": "message", "role": "developer", "content": "You are a worker."},
            AGENT_MESSAGE]


def test_an_agent_message_goes_to_openai_verbatim_also_after_a_restart(tmp_path: Path) -> None:
    body = {"model": "up/gpt-5.5", "input": _child_input()}
    with ResponsesEmulator() as emu:
        with running_gateway(emu, tmp_path, tokens=(TOKEN,), name="up",
                             provider="openai-responses", model="gpt-5.5") as gw:
            output = post(gw, "/v1/responses", body).json()["output"]
        body["input"] = [*body["input"], *output,
                         {"type": "message", "role": "user", "content": "Done?"}]
        with running_gateway(emu, tmp_path, tokens=(TOKEN,), name="up",
                             provider="openai-responses", model="gpt-5.5") as gw:
            post(gw, "/v1/responses", body)
        received = list(emu.received)
    assert [r.status for r in received] == [200, 200]
    for request in received:
        assert request.body["input"][1] == AGENT_MESSAGE
        assert orjson.dumps(AGENT_MESSAGE) in request.raw  # byte for byte, in place


@pytest.mark.parametrize("upstream", ["chat", "deepseek-responses"])
def test_another_upstream_gets_what_the_recipient_reads_and_never_the_sealed_part(
        deepseek: ChatEmulator, tmp_path: Path, upstream: str) -> None:
    log = tmp_path / "access.log"
    body = {"model": "up/deepseek-v4-pro", "input": _child_input()}
    emu = deepseek if upstream == "chat" else ResponsesEmulator("deepseek")
    provider = "deepseek" if upstream == "chat" else "deepseek-responses"
    with emu, running_gateway(emu, tmp_path, tokens=(TOKEN,), access_log=str(log), name="up",
                              provider=provider, model="deepseek-v4-pro") as gw:
        first = post(gw, "/v1/responses", body).json()
        body["input"] = [*body["input"], *first["output"],
                         {"type": "message", "role": "user", "content": "Done?"}]
        post(gw, "/v1/responses", body)
        received = list(emu.received)
    assert [r.status for r in received] == [200, 200]
    key = "messages" if upstream == "chat" else "input"
    for request in received:
        assert request.body[key][1] == {"role": "user", "content": SAID}
        assert SEALED.encode() not in request.raw and b"agent_message" not in request.raw
        assert request.raw.count(b"Count the files under src/.") == 1
    assert len(received[1].body[key]) > len(received[0].body[key])
    lines = log_lines(log)
    assert lines[1]["rehydrated"] >= 1  # the first answer found again
    if upstream == "chat":
        assert any("agent_message" in reason for reason in lines[0]["dropped"])


def test_a_kept_compaction_item_of_unrecorded_issuer_goes_to_no_other_server(
        tmp_path: Path) -> None:
    kept = {"type": "compaction", "id": "cmp_0001", "encrypted_content": "gAAAAA-compacted=="}
    body = {"model": "up/deepseek-v4-pro", "input": [
        {"type": "message", "role": "user", "content": "Plan a weekend in Oslo."}, kept,
        {"type": "message", "role": "user", "content": "And the weather there?"}]}
    with ResponsesEmulator("deepseek") as emu, running_gateway(
            emu, tmp_path, tokens=(TOKEN,), name="up", provider="deepseek-responses",
            model="deepseek-v4-pro") as gw:
        post(gw, "/v1/responses", body)
        (sent,) = emu.received
    assert sent.status == 200
    assert b"gAAAAA-compacted" not in sent.raw and b"compaction" not in sent.raw


def test_a_configuration_update_leaves_no_empty_turn_at_a_chat_upstream(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    """Codex 0.171.0 (gpt-6.2-sol, run against the gateway on loopback) puts a
    ``configuration_update`` item after the user's prompt. Only OpenAI's Responses API reads it;
    a Chat upstream got an empty assistant message in its place, so the conversation it saw
    ended with the assistant (the emulator answered an empty "user says")."""
    body = {"model": "up/deepseek-v4-pro", "input": [
        {"type": "message", "role": "user", "content": "Say hello in one word."},
        {"type": "configuration_update", "reasoning": {"effort": "low"}}]}
    with running_gateway(deepseek, tmp_path, tokens=(TOKEN,), name="up", provider="deepseek",
                         model="deepseek-v4-pro") as gw:
        assert post(gw, "/v1/responses", body).status_code == 200
    (request,) = deepseek.received
    sent = request.body["messages"]
    assert [m["role"] for m in sent] == ["user"], sent
    assert b"configuration_update" not in request.raw
