"""A turn-scoped ``role: "system"`` message (with its ``output_config``: docs/claude-code.md)
through the gateway's Messages face when the Anthropic upstream says the prompt is too long: the
compaction summarizes the head and the retry carries the message unchanged, in its place, with
the turn it precedes (issue 28 item 4)."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
from test_gateway_messages import serving

from thoughtline.testing.anthropic_emulator import AnthropicEmulator

TOKEN = "tok-in-place"
MODEL = "claude-opus-5-5"
SCOPED = {"role": "system", "content": "From now on, answer in French.",
          "output_config": {"effort": "low"}}


def test_a_scoped_system_message_survives_compaction_in_place(tmp_path: Path) -> None:
    messages: list[dict[str, object]] = []
    for i in range(12):
        messages.append({"role": "user", "content": f"Note {i}: " + "keep this in mind. " * 40})
        messages.append({"role": "assistant", "content": f"Noted {i}."})
    messages[-2:-2] = [SCOPED]  # right before the last exchange
    messages.append({"role": "user", "content": "What did I ask you to keep?"})
    body = {"model": MODEL, "max_tokens": 4000, "messages": messages}
    with AnthropicEmulator() as emu, serving(
            emu, tmp_path, tokens=(TOKEN,), provider="anthropic", model=MODEL,
            aliases=f'"*" = "up/{MODEL}"') as (origin, _):
        emu.limit_context(2200)  # the conversation is ~2,700 tokens on the wire
        reply = httpx.post(origin + "/v1/messages?beta=true", content=orjson.dumps(body),
                           headers={"x-api-key": TOKEN, "content-type": "application/json"},
                           timeout=60)
        received = list(emu.received)
    assert reply.status_code == 200, reply.text
    rejected, summary, retry = received
    assert (rejected.status, summary.status, retry.status) == (400, 200, 200)
    sent = retry.body["messages"]
    assert len(sent) < len(rejected.body["messages"])  # the head was summarized
    at = sent.index(SCOPED)  # unchanged, output_config and all
    # in its place: before the same exchange it preceded, which follows it unchanged
    after = sent[at + 1:]
    assert [m["role"] for m in after] == ["user", "assistant", "user"]
    assert after[0] == messages[-3] and after[2] == messages[-1]
    assert "Noted 11." in orjson.dumps(after[1]).decode()
    assert sent[at - 1]["role"] != "system"
