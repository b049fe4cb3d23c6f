"""Values only their own API carries, at every other API (``codecs.foreign``; issue 43 items 2, 5).

An Anthropic ``compaction`` block reaches every other API as its summary, in its place, and never
as the block or its ``encrypted_content``; the canonical turn keeps the block, so what the
gateway digests to find a stored turn is the same whether the turn came from a client or from
the store. A model's ``agent_message`` reaches another API as its text; its issuer gets the item.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from thoughtline import replay
from thoughtline.codecs import foreign, registry
from thoughtline.codecs.anthropic import client as messages
from thoughtline.codecs.anthropic.decode import decode_response
from thoughtline.codecs.base import RequestSpec
from thoughtline.gateway import rehydrate
from thoughtline.messages import Message, Opaque, Origin, Text, user

SUMMARY = "Summary: the user plans a weekend in Oslo."
SEALED = "EQ-sealed-compaction-state=="
BLOCK = {"type": "compaction", "content": SUMMARY, "encrypted_content": SEALED}
#: One route per API, none of them Anthropic's.
OTHERS = {"openai-chat": ("deepseek", None, "deepseek-v4-pro"),
          "openai-responses": ("openai", "https://api.openai.com/v1", "gpt-5.5"),
          "gemini": ("gemini", None, "gemini-3-pro"),
          "bedrock": ("bedrock", None, "anthropic.claude-opus-5"),
          "gemini-interactions": ("gemini", None, "gemini-3-pro")}


def body(api: str, history: list[Message], route: tuple[str, str | None, str]) -> bytes:
    resolved = registry.resolve(api, *route)
    return registry.codec(api).encode_request(
        history, replay.plan(resolved), RequestSpec(model=resolved.model)).raw


def client_history(block: dict[str, Any]) -> list[Message]:
    return list(messages.parse_request({"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": "Plan a weekend in Oslo."},
        {"role": "assistant", "content": [block, {"type": "text", "text": "Done."}]},
        {"role": "user", "content": "And the weather?"}]}).messages)


@pytest.mark.parametrize("api", sorted(OTHERS))
def test_another_api_gets_a_compaction_blocks_summary_in_place(api: str) -> None:
    sent = body(api, client_history(BLOCK), OTHERS[api])
    assert sent.count(SUMMARY.encode()) == 1
    assert sent.index(SUMMARY.encode()) < sent.index(b"Done.") < sent.index(b"And the weather?")
    assert SEALED.encode() not in sent and b"compaction" not in sent


@pytest.mark.parametrize("api", sorted(OTHERS))
def test_a_block_without_a_summary_is_nothing_elsewhere(api: str) -> None:
    sent = body(api, client_history({"type": "compaction", "content": None,
                                     "encrypted_content": SEALED}), OTHERS[api])
    assert SEALED.encode() not in sent and b"compaction" not in sent and b"Done." in sent


def test_the_readable_form_is_not_in_what_rehydration_digests() -> None:
    """The client's turn and the turn the Anthropic API returned digest alike: the summary is
    made when encoding for another API, not added to the canonical turn."""
    answer = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-5",
              "content": [BLOCK, {"type": "text", "text": "Done."}], "stop_reason": "end_turn",
              "usage": {"input_tokens": 5, "output_tokens": 5}}
    stored = decode_response(answer, Origin(api="anthropic", provider="anthropic",
                                            model="claude-opus-5")).message
    sent = client_history(BLOCK)[1]
    assert [type(p) for p in sent.parts] == [Opaque, Text] == [type(p) for p in stored.parts]
    assert rehydrate.visible_digest(sent) == rehydrate.visible_digest(stored)


def test_a_turn_without_another_apis_values_is_encoded_as_it_was() -> None:
    plain = Message(role="assistant", parts=(Text(text="Done."),))
    assert foreign.shown(plain, "openai-chat") is plain
    own = client_history(BLOCK)[1]
    assert foreign.shown(own, "anthropic") is own  # the issuer's API gets its own block


def test_a_models_agent_message_is_its_text_elsewhere_and_the_item_to_its_issuer() -> None:
    item = {"type": "agent_message", "id": "am_1", "author": "/root/worker", "recipient": "/root",
            "content": [{"type": "output_text", "text": "12 files."},
                        {"type": "encrypted_content", "encrypted_content": "gAAAAA-x=="}]}
    issuer = ("openai", "https://api.openai.com/v1", "gpt-5.5")
    made = Origin(api="openai-responses", provider="openai", host="api.openai.com",
                  model="gpt-5.5")
    history = [user("How many files?"),
               Message(role="assistant", origin=made,
                       parts=(Opaque(native={"openai-responses": item}, origin=made),))]
    said = b"Message from agent /root/worker to /root:\\n\\n12 files."
    assert orjson.dumps(item) in body("openai-responses", history, issuer)
    for api, route in (("anthropic", ("anthropic", None, "claude-opus-5")),
                       ("openai-chat", OTHERS["openai-chat"]),
                       ("openai-responses", ("deepseek", "https://api.deepseek.com",
                                             "deepseek-v4-pro"))):
        sent = body(api, history, route)
        assert said in sent and b"gAAAAA-x" not in sent and b"agent_message" not in sent, api
