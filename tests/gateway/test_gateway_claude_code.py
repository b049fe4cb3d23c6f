"""Recorded Claude Code request sequences replayed through the gateway (tests/fixtures/clients).

Each recorded request is sent as the client sent it — path with ``?beta=true``, its headers, its
body with turn-scoped system messages, ``context_management``, ``output_config`` — with the
gateway's own earlier answers put where the recording has the test server's, shaped the way the
recording shows the client resending them: verbatim, with ``"signature": ""``, or with every
thinking block dropped (after a signature 400), and after ``--resume`` the whole history again.
Behind the gateway a DeepSeek-personality upstream enforces its must-echo rule: every request is
accepted and every earlier turn's ``reasoning_content`` arrives byte-identical, also after a
gateway restart. An Anthropic upstream gets the real signed blocks back byte for byte.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from test_gateway_messages import serving

from helpers_fixtures import fixture
from thoughtline.codecs.face import MINT_PREFIX
from thoughtline.testing import ChatEmulator
from thoughtline.testing.anthropic_emulator import AnthropicEmulator

ALIAS = '"*" = "up/deepseek-v4-pro"'
TOKEN = "tok-claude-code"


def recorded(name: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in
            fixture(f"clients/{name}.requests.jsonl").read_bytes().splitlines() if line]


def read_sse(text: str) -> list[dict[str, Any]]:
    """The content blocks of a streamed Messages answer, as the client assembles them."""
    blocks: dict[int, dict[str, Any]] = {}
    pieces: dict[int, str] = {}
    for chunk in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines() if ": " in line)
        if "data" not in lines:
            continue
        event = orjson.loads(lines["data"])
        kind = event["type"]
        if kind == "error":
            raise AssertionError(f"the stream ended in an error: {event}")
        if kind == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif kind == "content_block_delta":
            delta, block = event["delta"], blocks[event["index"]]
            if delta["type"] == "input_json_delta":
                pieces[event["index"]] = pieces.get(event["index"], "") + delta["partial_json"]
            else:
                field = {"thinking_delta": "thinking", "signature_delta": "signature",
                         "text_delta": "text"}[delta["type"]]
                block[field] = block.get(field, "") + delta[field]
    for index, raw in pieces.items():
        blocks[index]["input"] = orjson.loads(raw)
    return [blocks[i] for i in sorted(blocks)]


class Replayer:
    """Sends recorded requests with the gateway's own answers substituted, in order."""

    def __init__(self) -> None:
        self.answers: list[list[dict[str, Any]]] = []
        self.ids: dict[str, str] = {}  # recorded tool_use id -> the gateway's

    def body(self, record: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(record["body"])
        turn = 0
        for message in body["messages"]:
            if message["role"] == "assistant":
                message["content"] = self._answer(message["content"], self.answers[turn])
                turn += 1
            elif isinstance(message["content"], list):
                for block in message["content"]:
                    if block.get("type") == "tool_result":
                        block["tool_use_id"] = self.ids[block["tool_use_id"]]
        return body

    def _answer(self, shape: list[dict[str, Any]], ours: list[dict[str, Any]]) -> list[Any]:
        """Our answer, resent the way the recording resent the server's."""
        thinking = [b for b in shape if b["type"] == "thinking"]
        calls = iter(b for b in ours if b["type"] == "tool_use")
        for block in shape:
            if block["type"] == "tool_use":
                self.ids[block["id"]] = next(calls)["id"]
        out = []
        for block in ours:
            if block["type"] == "thinking":
                if not thinking:
                    continue  # the client dropped every thinking block
                if thinking[0]["signature"] == "":
                    block = {**block, "signature": ""}
            out.append(block)
        return out

    def send(self, origin: str, record: dict[str, Any]) -> httpx.Response:
        headers = {k: v for k, v in record["headers"].items()
                   if k.lower() not in ("x-api-key", "connection", "accept-encoding",
                                        "content-length")}
        reply = httpx.post(origin + record["path"], content=orjson.dumps(self.body(record)),
                           headers={**headers, "x-api-key": TOKEN}, timeout=60)
        assert reply.status_code == 200, reply.text
        assert reply.headers["content-type"].startswith("text/event-stream")
        self.answers.append(read_sse(reply.text))
        return reply


def _echoed(emu: ChatEmulator) -> list[list[str]]:
    """Per upstream request: each assistant turn's ``reasoning_content``."""
    return [[m.get("reasoning_content", "") for m in r.body["messages"]
             if m["role"] == "assistant"] for r in emu.received]


def _thoughts(answers: list[list[dict[str, Any]]]) -> list[str]:
    return ["".join(b["thinking"] for b in a if b["type"] == "thinking") for a in answers]


@pytest.mark.parametrize("run", ["claude_code_run1", "claude_code_run3_unsigned",
                                 "claude_code_run4_redacted",
                                 "claude_code_run6_reject_signature"])
def test_recorded_sequences_keep_deepseek_reasoning(deepseek: ChatEmulator, tmp_path: Path,
                                                    run: str) -> None:
    replayer = Replayer()
    with serving(deepseek, tmp_path, tokens=(TOKEN,), aliases=ALIAS) as (origin, _):
        for record in recorded(run):
            replayer.send(origin, record)
    assert [r.status for r in deepseek.received] == [200] * len(recorded(run))
    thoughts = _thoughts(replayer.answers)
    assert all(thoughts) and all(MINT_PREFIX not in r.raw.decode() for r in deepseek.received)
    for echoed in _echoed(deepseek)[1:]:  # the first answer's reasoning, byte for byte
        assert echoed == [thoughts[0]]
    # Turn-scoped system messages stayed where the client put them.
    roles = [m["role"] for m in deepseek.received[0].body["messages"]]
    assert roles[:2] == ["system", "user"] and roles[-1] == "system"


def test_resume_after_a_restart_rehydrates_the_whole_history(deepseek: ChatEmulator,
                                                             tmp_path: Path) -> None:
    replayer = Replayer()
    with serving(deepseek, tmp_path, tokens=(TOKEN,), aliases=ALIAS) as (origin, _):
        for record in recorded("claude_code_run1"):
            replayer.send(origin, record)
    with serving(deepseek, tmp_path, tokens=(TOKEN,), aliases=ALIAS) as (origin, _):
        for record in recorded("claude_code_run2_resume"):  # `claude --resume`, restarted
            replayer.send(origin, record)
    assert [r.status for r in deepseek.received] == [200] * 4
    thoughts = _thoughts(replayer.answers)
    assert _echoed(deepseek)[2] == thoughts[:2]
    assert _echoed(deepseek)[3] == thoughts[:3]


def test_anthropic_upstream_gets_the_real_blocks_back_byte_for_byte(tmp_path: Path) -> None:
    replayer = Replayer()
    with AnthropicEmulator() as emu, serving(
            emu, tmp_path, tokens=(TOKEN,), provider="anthropic", model="claude-opus-5-5",
            aliases='"*" = "up/claude-opus-5-5"') as (origin, _):
        for record in recorded("claude_code_run1"):
            replayer.send(origin, record)
        received = emu.received
    assert [r.status for r in received] == [200, 200]
    first = replayer.answers[0]
    signed = [b for b in first if b["type"] in ("thinking", "redacted_thinking")]
    assert signed and not any(b.get("signature", "").startswith(MINT_PREFIX) for b in signed)
    sent = [m for m in orjson.loads(received[1].raw)["messages"] if m["role"] == "assistant"]
    assert sent[0]["content"] == first  # the real blocks, as the client got and resent them
    body = recorded("claude_code_run1")[1]["body"]
    assert orjson.loads(received[1].raw)["messages"][1] == body["messages"][1]  # in place
    assert received[1].headers["anthropic-beta"].startswith("claude-code-20250219")


def test_a_signature_400_is_repaired_inside_the_gateway(tmp_path: Path) -> None:
    """A signed block the gateway never stored (history from elsewhere, a stale signature) that
    the upstream rejects is left out and the request retried once: the client never sees the
    400 it would answer by stripping all thinking for good (claude_code_run6)."""
    stale = {"type": "thinking", "thinking": "An old thought.",
             "signature": "EoBOGUS" + "A" * 340}
    body = {"model": "claude-opus-5-5", "max_tokens": 16000, "messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [stale, {"type": "text", "text": "Hello there."}]},
        {"role": "user", "content": "Again"}]}
    with AnthropicEmulator() as emu, serving(
            emu, tmp_path, tokens=(TOKEN,), provider="anthropic", model="claude-opus-5-5",
            aliases='"*" = "up/claude-opus-5-5"') as (origin, _):
        reply = httpx.post(origin + "/v1/messages?beta=true", content=orjson.dumps(body),
                           headers={"x-api-key": TOKEN, "content-type": "application/json"},
                           timeout=60)
        statuses = [r.status for r in emu.received]
        retried = orjson.loads(emu.received[-1].raw)
    assert reply.status_code == 200, reply.text
    assert reply.json()["type"] == "message"
    assert statuses == [400, 200]  # one retry, inside the gateway
    assert stale["signature"] not in orjson.dumps(retried).decode()
