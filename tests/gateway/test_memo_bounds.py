"""The gateway's memo (issue 45 item 1) on its own: a resumed conversion equals a whole one, an
edit is converted again from where it is, tenants never share entries, and the bounds hold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from thoughtline.codecs.anthropic.client import parse_request as messages_request
from thoughtline.codecs.face import Walked, walk
from thoughtline.codecs.openai_chat.client import parse_request
from thoughtline.gateway.memo import Memos
from thoughtline.messages import Message, Reasoning, Text

Seen = list[int]


def _counting(seen: Seen) -> Any:
    def convert(items: Sequence[Any], start: int, walked: Walked) -> None:
        for index in range(start, len(items)):
            seen.append(index)
            walked.messages.append(orjson.dumps(items[index]))  # type: ignore[arg-type]

    convert.__qualname__ = "counting"
    return convert


def _items(count: int) -> list[Any]:
    return [{"role": "user", "content": f"question {i}"} for i in range(count)]


def test_a_resent_prefix_is_not_converted_again_and_an_edit_is() -> None:
    seen: Seen = []
    memo = Memos().items("alice")
    assert memo is not None
    items = _items(6)
    memo.walk(items[:4], _counting(seen))
    assert memo.walk(items, _counting(seen)).messages == walk(items, _counting([])).messages
    assert seen == [0, 1, 2, 3, 4, 5]  # the last two only, the second time
    seen.clear()
    edited = [*items[:2], {"role": "user", "content": True}, *items[3:]]
    assert memo.walk(edited, _counting(seen)).messages == walk(edited, _counting([])).messages
    assert 2 in seen  # (from the start: no earlier request ended before the edit)
    seen.clear()
    again = [*items[:2], {"role": "user", "content": 1}, *items[3:]]
    assert memo.walk(again, _counting(seen)).messages == walk(again, _counting([])).messages
    assert 2 in seen  # 1 is not true: items are compared as serialized, not by ==
    seen.clear()
    memo.walk([*again, *_items(1)], _counting(seen))
    assert seen == [6]


def test_a_tenant_never_resumes_from_another_tenants_conversion() -> None:
    memos = Memos()
    seen: Seen = []
    alice, bob = memos.items("alice"), memos.items("bob")
    assert alice is not None and bob is not None
    alice.walk(_items(5), _counting(seen))
    seen.clear()
    bob.walk(_items(5), _counting(seen))
    assert seen == [0, 1, 2, 3, 4]


def test_chat_tool_results_joined_across_the_resumed_boundary() -> None:
    body: dict[str, Any] = {"model": "m", "messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "w", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "sunny"}]}
    memo = Memos().items("alice")
    parse_request(body, memo)
    body["messages"].append({"role": "tool", "tool_call_id": "b", "content": "rain"})
    assert parse_request(body, memo) == parse_request(body)  # one turn of two results


def test_the_bounds_evict_the_least_recently_used() -> None:
    memos = Memos(entries=2)
    memo = memos.items("alice")
    assert memo is not None
    for count in (1, 2, 3):
        memo.walk([{"conversation": count}], _counting([]))
    assert len(memos._walks) == 2
    small = Memos(max_bytes=60)
    tiny = small.items("alice")
    assert tiny is not None
    tiny.walk(_items(1), _counting([]))
    tiny.walk(_items(3), _counting([]))  # more than 60 bytes of items: not kept
    assert len(small._walks) == 1 and small._bytes <= 60
    assert Memos(entries=0).items("alice") is None


def test_messages_tool_changes_and_own_blocks_seen_in_a_resumed_prefix() -> None:
    """What an earlier item says of the whole request (a tool added mid-conversation, a block
    only an Anthropic upstream takes) still counts when that item is not converted again."""
    tool = {"name": "weather", "description": "", "input_schema": {"type": "object"}}
    body: dict[str, Any] = {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "Look."},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]},
        {"role": "assistant", "content": [
            {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": tool}},
            {"type": "text", "text": "Added."}]}]}
    memo = Memos().items("alice")
    messages_request(body, {}, memo)
    body["messages"].append({"role": "user", "content": "Weather?"})
    resumed, whole = messages_request(body, {}, memo), messages_request(body, {})
    assert [t.name for t in resumed.tools] == ["weather"]
    assert resumed.dropped_to("openai-chat") == whole.dropped_to("openai-chat")
    assert "image blocks" in resumed.dropped_to("openai-chat")
    assert resumed == whole


def test_a_message_without_its_reasoning_is_made_once() -> None:
    """The reasoning a client carried beside a minted value is left out of every resent turn
    on every request: the same object comes back, so its chain digests are remembered too."""
    turn = Message(role="assistant", parts=(Reasoning(kind="summary", summary="mine"),
                                            Text(text="Sunny.")))
    memos = Memos()
    first = memos.unreasoned(turn)
    assert first.parts == (Text(text="Sunny."),) and memos.unreasoned(turn) is first
    assert memos.element(first) is memos.element(memos.unreasoned(turn))
    off = Memos(entries=0)
    assert off.unreasoned(turn) == first and off.unreasoned(turn) is not off.unreasoned(turn)


def test_only_the_prefixes_the_memo_holds_are_digested() -> None:
    """Each item is hashed once; a prefix's digest is made only for the item counts the tenant
    has entries of (and kept track of as entries go)."""
    memos = Memos(entries=2)
    memo = memos.items("alice")
    assert memo is not None
    for count in (2, 4, 6):
        memo.walk(_items(count), _counting([]))
    assert memos._counts == {"alice": {4: 1, 6: 1}}  # the entry of 2 went first
    seen: Seen = []
    fresh = memos.items("alice")
    assert fresh is not None
    fresh.walk(_items(7), _counting(seen))
    assert seen == [6] and fresh._prefixes is not None
    assert sorted(fresh._prefixes.made) == [6, 7]  # the hit, and the entry kept
    assert memos._counts == {"alice": {6: 1, 7: 1}}
    other = memos.items("bob")
    assert other is not None and other.seen(_items(7)) == 0
    assert other._prefixes is not None and not other._prefixes.made  # nothing of bob's held
