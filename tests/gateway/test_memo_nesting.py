"""Issue 45: the body's nesting bound walks only what the items memo did not already see.

Conversation items an earlier request of the tenant sent were checked when they came; a request
walks the rest of its body and its new items. The bound still holds for every new item and
every other part of the body, and its 400 still names the limit.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from thoughtline import depth
from thoughtline.codecs import shape
from thoughtline.gateway.faces import CHAT, MESSAGES, RESPONSES
from thoughtline.gateway.memo import Memos
from thoughtline.gateway.request import HttpError, client_request


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


def _chat(count: int, **extra: Any) -> dict[str, Any]:
    return {"model": "m", **extra,
            "messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}
                         for i in range(count)]}


def _walked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, object]]:
    """Each value the request's nesting check walks, with what it left out."""
    calls: list[tuple[Any, object]] = []
    check = depth.deeper_than

    def spying(value: Any, limit: int = shape.MAX_DEPTH, *, raw: Any = None,
               skip: object = None) -> bool:
        calls.append((value, skip))
        return check(value, limit, skip=skip)  # (no ``raw``: always walk, to be seen)

    monkeypatch.setattr(shape, "deeper_than", spying)
    return calls


def test_a_memoized_prefix_is_not_walked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    memos = Memos()
    client_request(orjson.dumps(_chat(6)), CHAT, {}, memos.items("alice"))
    calls = _walked(monkeypatch)
    body = _chat(8)
    client_request(orjson.dumps(body), CHAT, {}, memos.items("alice"))
    (whole, skipped), (fresh, _) = calls
    assert whole["messages"] == body["messages"] and skipped is whole["messages"]
    assert fresh == body["messages"][6:]  # only the two new items
    calls.clear()
    client_request(orjson.dumps(body), CHAT, {}, memos.items("bob"))
    assert len(calls[1][0]) == 8  # another tenant's request walks every item


@pytest.mark.parametrize("face", [CHAT, MESSAGES, RESPONSES], ids=lambda f: f.name)
def test_a_too_deep_new_item_is_refused_after_a_memoized_prefix(face: Any) -> None:
    key = "input" if face is RESPONSES else "messages"
    memos = Memos()
    items: list[Any] = [{"role": "user", "content": "Weather?"},
                        {"role": "assistant", "content": "Sunny."}]
    body = {"model": "m", "max_tokens": 10, key: items}
    client_request(orjson.dumps(body), face, {}, memos.items("alice"))
    # 127 levels in the item: 129 in the body (the body object and the items array above it)
    body[key] = [*items, {"role": "user", "content": "x", "metadata": _deep(126)}]
    with pytest.raises(HttpError) as refused:
        client_request(orjson.dumps(body), face, {}, memos.items("alice"))
    assert refused.value.status == 400 and refused.value.code == "too_deep"
    assert f"deeper than {shape.MAX_DEPTH} levels" in str(refused.value)
    body[key] = [*items, {"role": "user", "content": "x", "metadata": _deep(125)}]
    client_request(orjson.dumps(body), face, {}, memos.items("alice"))  # at the bound: taken


def test_the_rest_of_the_body_is_still_walked() -> None:
    memos = Memos()
    client_request(orjson.dumps(_chat(4)), CHAT, {}, memos.items("alice"))
    with pytest.raises(HttpError) as refused:
        client_request(orjson.dumps(_chat(4, metadata=_deep(130))), CHAT, {},
                       memos.items("alice"))
    assert refused.value.code == "too_deep"


def test_items_parsed_without_the_check_are_not_taken_as_checked() -> None:
    memos = Memos()
    unchecked = memos.items("alice")
    assert unchecked is not None
    CHAT.parse(_chat(4), {}, unchecked)  # converted, remembered, but never checked
    asked = memos.items("alice")
    assert asked is not None and asked.seen(_chat(4)["messages"]) == 0
    client_request(orjson.dumps(_chat(4)), CHAT, {}, memos.items("alice"))
    again = memos.items("alice")
    assert again is not None and again.seen(_chat(5)["messages"]) == 4


def test_an_item_nested_past_what_a_digest_can_serialize_is_a_400() -> None:
    """orjson parses 1,024 levels but writes 255: the memo digests items as serialized, and such
    an item is still the bound's 400, not a server error."""
    body = (b'{"model": "m", "messages": [{"role": "user", "content": "x", "m": '
            + b"[" * 300 + b"]" * 300 + b"}]}")
    with pytest.raises(HttpError) as refused:
        client_request(body, CHAT, {}, Memos().items("alice"))
    assert refused.value.status == 400 and refused.value.code == "too_deep"
