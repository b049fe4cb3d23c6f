"""The canonical message model and its lossless JSON form (docs/design.md)."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from thoughtline.errors import ProtocolError
from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    digest,
    dumps,
    loads,
    message_to_json,
    part_from_json,
    system,
    tool_results,
    user,
)

_CHARS = st.characters(exclude_categories=("Cs",))  # any code point a JSON string can hold
TEXT = st.text(_CHARS, max_size=30)
ASTRAL = st.text(st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF), min_size=1,
                 max_size=10)
_B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
BASE64 = st.builds(lambda body, pad: body + "=" * pad,
                   st.text(st.sampled_from(_B64_ALPHABET), min_size=4, max_size=60),
                   st.integers(0, 2))
LONG = st.builds(lambda s, n: s * n, st.text(_CHARS, min_size=1, max_size=8), st.integers(300, 900))
OPAQUE = st.one_of(TEXT, ASTRAL, BASE64, LONG)
MAYBE = st.one_of(st.none(), OPAQUE)

JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False), OPAQUE)
JSON = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)), max_leaves=12)
NATIVE = st.dictionaries(st.sampled_from(["openrouter", "google", "copilot", "mistral", "x"]),
                         JSON, max_size=3)
ORIGINS = st.one_of(st.none(), st.builds(Origin, api=TEXT, provider=TEXT, host=TEXT, model=TEXT))

PARTS = st.one_of(
    st.builds(Text, text=TEXT),
    st.builds(Reasoning, kind=st.sampled_from(["text", "summary", "signed", "redacted",
                                               "encrypted"]),
              text=MAYBE, summary=MAYBE, signature=MAYBE, data=MAYBE, complete=st.booleans(),
              origin=ORIGINS, native=NATIVE),
    st.builds(ToolCall, id=TEXT, name=TEXT, arguments=OPAQUE, native=NATIVE),
    st.builds(ToolResult, call_id=TEXT, content=OPAQUE, is_error=st.booleans()),
)
MESSAGES = st.builds(Message, role=st.sampled_from(["system", "user", "assistant", "tool"]),
                     parts=st.lists(PARTS, max_size=6).map(tuple), origin=ORIGINS,
                     incomplete=st.booleans(), native=NATIVE)

SIGNED = Reasoning(kind="signed", text="t", signature="RXU4+/ab==")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


@settings(max_examples=150, deadline=None)
@given(message=MESSAGES)
@example(message=Message(role="assistant", parts=(SIGNED,)))
@example(message=Message(role="assistant", parts=(
    Reasoning(kind="encrypted", data="gAAAA" + "x" * 200_000 + "=="),
    Reasoning(kind="text", text="\U0001d518\U0001f389 \u2028\u2029 \x00 \ud7ff\ue000\U0010ffff"),
    ToolCall(id="", name="n", arguments='{"a": 1.0e5, "b": [1,2]}',
             native={"google": {"thought_signature": "Y29udGV4dA=="}}),
), native={"copilot": {"reasoning_opaque": "b3BhcXVl", "reasoning_text": ""}}))
def test_any_message_round_trips_exactly(message: Message) -> None:
    data = dumps(message)
    back = loads(data)
    assert back == message
    assert dumps(back) == data  # stable bytes: same message, same bytes, same digest
    assert digest(dumps(back)) == digest(data)
    # every string (opaque ones included) comes back with the same code points and UTF-8 bytes,
    # and every native mapping keeps its key order
    original, again = message_to_json(message), message_to_json(back)
    assert [s.encode() for s in _strings(original)] == [s.encode() for s in _strings(again)]
    assert orjson.dumps(original) == orjson.dumps(again)
    assert loads(data.decode()) == message  # str input too


@settings(max_examples=50, deadline=None)
@given(native=NATIVE)
def test_native_key_order_is_kept(native: dict[str, Any]) -> None:
    reordered = dict(reversed(list(native.items())))
    message = Message(role="assistant", native=reordered)
    assert list(loads(dumps(message)).native) == list(reordered)


def test_opaque_strings_are_not_reencoded() -> None:
    # Padding, url-safe alphabets and astral characters are kept exactly as received.
    values = ["QUJD", "QUI=", "QQ==", "-_8=", "𝔘𝔫𝔦🎉", "é", "e\u0301", "x" * 1_000_000]
    for value in values:
        part = Reasoning(kind="redacted", data=value, signature=value,
                         native={"openrouter": {"data": value}})
        back = loads(dumps(Message(role="assistant", parts=(part,))))
        (again,) = back.parts
        assert isinstance(again, Reasoning)
        assert again.data == again.signature == again.native["openrouter"]["data"] == value
        assert again.data.encode() == value.encode()


def test_defaults_are_omitted_and_flags_survive() -> None:
    part = Reasoning(kind="signed", text="t", signature="s", complete=False,
                     origin=Origin(api="anthropic", provider="anthropic"))
    message = Message(role="assistant", parts=(part,), incomplete=True)
    raw = message_to_json(message)
    assert raw["incomplete"] is True and raw["parts"][0]["complete"] is False
    assert "summary" not in raw["parts"][0] and "data" not in raw["parts"][0]
    back = loads(dumps(message))
    assert back.incomplete and not back.parts[0].complete  # type: ignore[union-attr]
    assert back.parts[0].origin == part.origin  # type: ignore[union-attr]
    plain = message_to_json(user("hi"))
    assert "incomplete" not in plain and "native" not in plain and "origin" not in plain


def test_empty_strings_are_not_none() -> None:
    part = Reasoning(kind="text", text="", summary=None)
    (back,) = loads(dumps(Message(role="assistant", parts=(part,)))).parts
    assert back == part and back.text == "" and back.summary is None  # type: ignore[union-attr]


def test_unknown_part_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown part type"):
        part_from_json({"t": "image", "url": "x"})


def test_digest() -> None:
    data = dumps(user("hello"))
    assert digest(data) == "sha256:" + hashlib.sha256(data).hexdigest()
    assert digest(data) != digest(dumps(user("hello!")))


def test_values_are_frozen() -> None:
    message = user("hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.role = "system"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        SIGNED.signature = "other"  # type: ignore[misc]


# --- accessors ------------------------------------------------------------------------------------

CALL = ToolCall(id="c1", name="weather", arguments="{}")


def test_accessors_keep_part_order() -> None:
    message = Message(role="assistant", parts=(
        Reasoning(kind="text", text="a"), Text(text="one "), CALL, SIGNED, Text(text="two")))
    assert message.text == "one two"
    assert message.tool_calls == (CALL,)
    assert [p.text for p in message.reasoning] == ["a", "t"]
    results = tool_results([ToolResult(call_id="c1", content="sunny")])
    assert results.role == "tool" and results.tool_results[0].content == "sunny"
    assert system("s").role == "system" and system("s").text == "s"


def test_reasoning_text_prefers_plain_reasoning() -> None:
    structured = Reasoning(kind="signed", text="signed copy", signature="s",
                           native={"openrouter": {"type": "reasoning.text"}})
    message = Message(role="assistant", parts=(Reasoning(kind="text", text="flat "), structured,
                                               Reasoning(kind="text", text="more")))
    assert message.reasoning_text() == "flat more"


def test_reasoning_text_falls_back_to_structured_text_and_summaries() -> None:
    message = Message(role="assistant", parts=(
        Reasoning(kind="summary", summary="sum ", native={"openrouter": {}}),
        Reasoning(kind="encrypted", data="opaque", native={"openrouter": {}}),
        Reasoning(kind="signed", text="signed", signature="s", native={"openrouter": {}})))
    assert message.reasoning_text() == "sum signed"
    assert Message(role="assistant", parts=(Text(text="x"),)).reasoning_text() == ""


def test_is_opaque() -> None:
    assert SIGNED.is_opaque
    assert Reasoning(kind="encrypted", data="d").is_opaque
    assert not Reasoning(kind="text", text="t").is_opaque
    assert not Reasoning(kind="signed", text="t", signature="").is_opaque


@pytest.mark.parametrize("bad", [b"not json", b'{"role": "assistant", "parts": [{"t": "text", '
                                 b'"text": "x", "native": ' + b'{"a":' * 900 + b'1' + b'}' * 900
                                 + b'}]}'])
def test_loads_of_bytes_that_are_no_message_is_a_protocol_error(bad: bytes) -> None:
    """Not a RecursionError or a JSONDecodeError (issue 46 item 3): one error a caller handles."""
    with pytest.raises(ProtocolError):
        loads(bad)
