"""Late-2026 Anthropic blocks in the codec and the emulator (anthropic-sdk-python 2.17 beta types).

The whole decode and the stream fold agree on a fallback turn (answering model, per-part
models); a compaction block goes only to the host that made it, its summary elsewhere; one with
``encrypted_content`` in place of a signature still reads as a native compaction; the emulator
refuses a fallback turn sent back without its marker or with the marker changed.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.anthropic import compaction
from thoughtline.codecs.anthropic.decode import decode_response
from thoughtline.codecs.anthropic.fold import fold
from thoughtline.codecs.base import RequestSpec
from thoughtline.messages import Message, Opaque, Origin, Text, user
from thoughtline.testing import anthropic_replies as replies
from thoughtline.testing.anthropic_emulator import AnthropicEmulator
from thoughtline.testing.anthropic_fallback import Hop

ASKED, TO = "claude-fable-5-1", "claude-opus-5"
HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01",
           "anthropic-beta": "server-side-fallback-2026-07-01"}
ORIGIN = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com", model=ASKED)


def _ask(emu: AnthropicEmulator, messages: list[Any], *, stream: bool = False) -> httpx.Response:
    body = {"model": ASKED, "max_tokens": 2000, "fallbacks": [{"model": TO}],
            "messages": messages, "stream": stream}
    return httpx.post(f"{emu.base_url}/v1/messages", json=body, headers=HEADERS, timeout=30)


def test_decode_and_fold_agree_on_the_model_of_each_part() -> None:
    with AnthropicEmulator() as emu:
        emu.decline_next()
        whole = _ask(emu, [{"role": "user", "content": "hi"}]).json()
        emu.decline_next()
        streamed = _ask(emu, [{"role": "user", "content": "hi"}], stream=True)
    assert whole["model"] == TO
    events = [(chunk.split("\n")[0].removeprefix("event: "),
               orjson.loads(chunk.split("data: ", 1)[1]))
              for chunk in streamed.text.strip().split("\n\n")]
    done, folded = decode_response(whole, ORIGIN), fold(events, ORIGIN)
    assert done.message == folded.message
    assert done.message.origin is not None and done.message.origin.model == TO
    models = [getattr(p, "origin", None) and p.origin.model for p in done.message.parts]
    assert models[:3] == [ASKED, ASKED, TO]  # thinking, the marker, the fallback's thinking


def test_the_emulator_refuses_a_fallback_turn_without_or_with_a_changed_marker() -> None:
    with AnthropicEmulator() as emu:
        emu.decline_next()
        content = _ask(emu, [{"role": "user", "content": "hi"}]).json()["content"]
        marker = next(b for b in content if b["type"] == "fallback")
        later = {"role": "user", "content": "more"}
        first = {"role": "user", "content": "hi"}
        kept = _ask(emu, [first, {"role": "assistant", "content": content}, later])
        without = [b for b in content if b["type"] != "fallback"]
        merged = _ask(emu, [first, {"role": "assistant", "content": without}, later])
        reordered = [dict(reversed(list(b.items()))) if b is marker else b for b in content]
        moved = _ask(emu, [first, {"role": "assistant", "content": reordered}, later])
    assert kept.status_code == 200, kept.text
    assert merged.status_code == 400 and "content.1" in merged.text  # two chains merged
    assert moved.status_code == 400 and "fallback" in moved.text


def _compaction_turn(host: str, block: dict[str, Any]) -> Message:
    origin = Origin(api="anthropic", provider="anthropic", host=host, model=ASKED)
    return Message(role="assistant", parts=(Opaque(native={"anthropic": block}, origin=origin),
                                            Text(text="ok")), origin=origin)


def test_a_compaction_block_goes_only_to_its_host_and_its_summary_elsewhere() -> None:
    block = {"type": "compaction", "content": "We talked about locks.",
             "encrypted_content": "gAAAA-opaque"}
    codec = registry.codec("anthropic")
    history = [user("hi"), _compaction_turn("api.anthropic.com", block), user("go on")]
    sent = {}
    for host in ("api.anthropic.com", "other.example.com"):
        route = codec.resolve("anthropic", f"https://{host}", ASKED)
        body = codec.encode_request(history, replay.plan(route), RequestSpec(model=ASKED)).body
        sent[host] = orjson.loads(orjson.dumps(body))["messages"][1]["content"]
    assert sent["api.anthropic.com"][0] == block
    assert orjson.dumps(block) in orjson.dumps(sent["api.anthropic.com"])  # key order kept
    assert sent["other.example.com"][0] == {"type": "text", "text": "We talked about locks."}
    assert b"gAAAA" not in orjson.dumps(sent["other.example.com"])
    native = compaction.native_compaction(ASKED, {})
    assert native is not None
    assert native.read(_compaction_turn("h", block)) is not None
    assert native.read(_compaction_turn("h", {**block, "encrypted_content": ""})) is None


def test_the_emulator_streams_a_fallback_block_whole_without_deltas() -> None:
    hop = Hop(source=ASKED, to=TO, category="cyber")
    reply = replies.Reply(content=[hop.block()], stop_reason="end_turn", message_id="m")
    events = list(replies.events(reply, TO, {"input_tokens": 1}, None))
    starts = [p for name, p in events if name == "content_block_start"]
    assert starts[0]["content_block"] == hop.block()
    assert not [p for name, p in events if name == "content_block_delta"]
