"""No silent unknowns: every input item and content part type in the installed ``openai``
SDK's unions is classified by the Responses face (``codecs.openai_responses.kinds``), every
content block type in the ``anthropic`` SDK's by the Messages face (``codecs.anthropic.kinds``),
and a type classified as its own API's reaches an upstream of that API verbatim, in place, while
another API gets none of it and the request log names it. A new SDK release with a new type
fails the first test until someone decides what the face does with it."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import orjson
import pytest
from anthropic.types.beta.beta_content_block_param import BetaContentBlockParam
from openai.types.chat import ChatCompletionContentPartParam, ChatCompletionMessageParam
from openai.types.chat.chat_completion_assistant_message_param import ContentArrayOfContentPart
from openai.types.responses import ResponseInputItemParam
from openai.types.responses.response_input_message_content_list_param import (
    ResponseInputContentParam,
)
from openai.types.responses.response_output_message_param import Content as OutputContent

from thoughtline import replay
from thoughtline.codecs.anthropic import client as messages
from thoughtline.codecs.anthropic import kinds as blocks
from thoughtline.codecs.face import ClientRequestError
from thoughtline.codecs.openai_chat import client as chat_face
from thoughtline.codecs.openai_chat import encode_request as chat_request
from thoughtline.codecs.openai_chat import kinds as chat_kinds
from thoughtline.codecs.openai_chat.profile import resolve_chat
from thoughtline.codecs.openai_responses import client, encode, kinds, resolve_responses

DOCS = Path(__file__).resolve().parents[2] / "docs" / "faces.md"


def _literals(hint: Any) -> set[str]:
    if typing.get_origin(hint) is typing.Literal:
        return {a for a in typing.get_args(hint) if isinstance(a, str)}
    return {v for arg in typing.get_args(hint) for v in _literals(arg)}


def _types(union: Any) -> set[str]:
    return {t for member in typing.get_args(union)
            for t in _literals(typing.get_type_hints(member).get("type"))}


def _members(union: Any) -> list[Any]:
    if typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    out = []
    for member in typing.get_args(union):
        nested = typing.get_origin(member) in (typing.Union, typing.Annotated)
        out.extend(_members(member) if nested else [member])
    return out


def _declared(member: Any, key: str = "type") -> set[str]:
    """The ``key`` literals a TypedDict declares, read from its annotations' text (some of the
    anthropic SDK's param types do not evaluate under ``get_type_hints``)."""
    found: dict[str, Any] = {}
    for klass in reversed(member.__mro__):
        found.update(getattr(klass, "__annotations__", {}))
    hint = found.get(key)
    text = hint if isinstance(hint, str) else repr(hint)
    return set(re.findall(r"Literal\[['\"]([^'\"]+)['\"]\]", text))


ITEM_TYPES = _types(ResponseInputItemParam)
BLOCK_TYPES = {t for m in _members(BetaContentBlockParam) for t in _declared(m)}
CHAT_ROLES = {t for m in _members(ChatCompletionMessageParam) for t in _declared(m, "role")}
CHAT_PARTS = {t for u in (ChatCompletionContentPartParam, ContentArrayOfContentPart)
              for m in _members(u) for t in _declared(m)}
PART_TYPES = _types(ResponseInputContentParam) | _types(OutputContent)


def test_every_sdk_input_item_and_part_type_is_classified() -> None:
    assert len(ITEM_TYPES) >= 30 and len(PART_TYPES) >= 4  # the walk found the unions
    assert sorted(ITEM_TYPES - set(kinds.ITEMS)) == []
    assert sorted(PART_TYPES - set(kinds.PARTS)) == []
    assert len(BLOCK_TYPES) >= 20 and {"thinking", "fallback", "tool_addition"} <= BLOCK_TYPES
    assert sorted(BLOCK_TYPES - set(blocks.BLOCKS)) == []
    assert {"tool", "function"} <= CHAT_ROLES and {"image_url", "refusal"} <= CHAT_PARTS
    assert sorted(CHAT_ROLES - set(chat_kinds.ROLES)) == []
    assert sorted(CHAT_PARTS - set(chat_kinds.PARTS)) == []


def test_the_docs_table_lists_every_classified_type() -> None:
    text = DOCS.read_text()
    for kind in (*kinds.ITEMS, *kinds.PARTS, *blocks.BLOCKS, *chat_kinds.ROLES,
                 *chat_kinds.PARTS):
        assert f"| `{kind}` |" in text, kind


CHAT = replay.plan(resolve_chat("deepseek", None, "deepseek-v4-pro"))
RESPONSES = replay.plan(resolve_responses("openai-responses", "https://api.openai.com/v1",
                                          "gpt-5.5"))
OWN_ITEMS = sorted(k for k, v in kinds.ITEMS.items() if v == kinds.OWN)
MARK = "tl-kind-probe-7f3a"


@pytest.mark.parametrize("kind", OWN_ITEMS)
def test_an_item_of_its_own_api_goes_verbatim_to_it_and_nowhere_else(kind: str) -> None:
    item = {"type": kind, "id": f"{kind}_1", "note": MARK}
    body = {"model": "m", "input": [{"role": "user", "content": "go"}, item,
                                    {"role": "user", "content": "and then?"}]}
    request = client.parse_request(body)
    assert kinds.dropped_item(kind) in request.dropped_to("openai-chat")
    assert kinds.dropped_item(kind) not in request.dropped_to("openai-responses")
    to_chat = orjson.dumps(chat_request(request.messages, CHAT, model="deepseek-v4-pro"))
    assert MARK.encode() not in to_chat
    to_responses = encode.encode_request(request.messages, RESPONSES, model="gpt-5.5")
    assert orjson.dumps(item) in orjson.dumps(to_responses["input"])


@pytest.mark.parametrize("kind", sorted(k for k, v in kinds.PARTS.items() if v == kinds.OWN))
def test_a_content_part_of_its_own_api_is_named_when_another_api_cannot_take_it(
        kind: str) -> None:
    body = {"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "look"}, {"type": kind, "note": MARK}]}]}
    request = client.parse_request(body)
    assert kinds.dropped_part(kind) in request.dropped_to("openai-chat")
    to_chat = orjson.dumps(chat_request(request.messages, CHAT, model="deepseek-v4-pro"))
    assert MARK.encode() not in to_chat and b"look" in to_chat


@pytest.mark.parametrize("kind", sorted(k for k, v in blocks.BLOCKS.items() if v == blocks.OWN))
def test_a_block_of_its_own_api_is_named_when_another_api_cannot_take_it(kind: str) -> None:
    block = {"type": kind, "note": MARK}
    body = {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}, block]},
        {"role": "user", "content": "and then?"}]}
    request = messages.parse_request(body)
    assert any(kind in reason for reason in request.dropped_to("openai-chat")), kind
    to_chat = orjson.dumps(chat_request(request.messages, CHAT, model="deepseek-v4-pro"))
    assert MARK.encode() not in to_chat and b"and then?" in to_chat


@pytest.mark.parametrize("kind", sorted(k for k, v in chat_kinds.PARTS.items()
                                        if v == chat_kinds.DROPPED))
def test_a_chat_part_no_upstream_takes_is_named_for_every_api(kind: str) -> None:
    role = "assistant" if kind == "refusal" else "user"
    body = {"model": "m", "messages": [{"role": role, "content": [
        {"type": "text", "text": "look"}, {"type": kind, "note": MARK}]},
        {"role": "user", "content": "well?"}]}
    request = chat_face.parse_request(body)
    for api in ("openai-chat", "anthropic", "openai-responses"):
        assert f"content[{kind}]" in request.dropped_to(api)
    to_chat = orjson.dumps(chat_request(request.messages, CHAT, model="deepseek-v4-pro"))
    assert MARK.encode() not in to_chat and b"look" in to_chat


def test_a_refused_chat_role_is_a_400_naming_it() -> None:
    (role,) = [k for k, v in chat_kinds.ROLES.items() if v == chat_kinds.REFUSED]
    with pytest.raises(ClientRequestError, match=f"role '{role}'"):
        chat_face.parse_request({"model": "m", "messages": [
            {"role": role, "name": "f", "content": "x"}]})
