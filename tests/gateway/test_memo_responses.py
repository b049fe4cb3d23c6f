"""Issue 45 item 1 on the Responses face: its input items are converted once (``memo``).

Consecutive assistant items make one turn and consecutive outputs one tool turn, so a request
often ends inside a turn the next request goes on with: what the conversion holds there
(``Walked.held``) is remembered with it. Whatever the split, a resumed parse equals a whole one;
a resent prefix is not converted again, and an edit is converted again from the last request
that ended before it.
"""

from __future__ import annotations

from typing import Any

import pytest

from thoughtline.codecs.face import MINT_PREFIX
from thoughtline.codecs.openai_responses import client
from thoughtline.gateway.memo import Memos

WEATHER = {"type": "function", "name": "weather", "description": "",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
ITEMS: list[Any] = [
    {"role": "user", "content": "Weather in Paris?"},
    {"type": "message", "role": "developer",
     "content": [{"type": "input_text", "text": "Be brief."}]},
    {"type": "additional_tools", "tools": [WEATHER]},
    {"type": "reasoning", "id": "rs_1", "summary": [], "content": None,
     "encrypted_content": "gAAAAB-provider-sealed"},
    {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "weather",
     "arguments": '{"city": "Paris"}'},
    {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "weather",
     "arguments": '{"city": "Lyon"}'},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    {"type": "additional_tools", "tools": [{**WEATHER, "name": "rain"}]},
    {"type": "function_call_output", "call_id": "c2", "output": "rain"},
    {"type": "reasoning", "id": "rs_2", "encrypted_content": f"{MINT_PREFIX}minted-by-us",
     "summary": [{"type": "summary_text", "text": "Looked it up."}]},
    {"type": "message", "role": "assistant", "content": "Sunny in Paris, rain in Lyon."},
    {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "And this?"},
        {"type": "input_image", "image_url": "https://example.com/a.png"}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    {"type": "message", "role": "assistant", "content": "A cat."},
    {"type": "compaction", "encrypted_content": f"{MINT_PREFIX}checkpoint"},
    {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch", "input": "*** Begin"},
    {"type": "custom_tool_call_output", "call_id": "c3", "output": "done"},
    {"role": "user", "content": "Thanks."},
]


def _body(items: list[Any]) -> dict[str, Any]:
    return {"model": "m", "instructions": "You are terse.", "input": items, "tools": [WEATHER]}


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The input items the face converts from now on, by their place."""
    converted: list[str] = []
    item = client._Walk.item

    def counting(self: Any, value: Any, where: str) -> None:
        converted.append(where)
        item(self, value, where)

    monkeypatch.setattr(client._Walk, "item", counting)
    return converted


@pytest.mark.parametrize("split", range(1, len(ITEMS)))
def test_a_parse_resumed_after_any_split_equals_the_whole_parse(split: int) -> None:
    memo = Memos().items("alice")
    first = client.parse_request(_body(ITEMS[:split]), {}, memo)
    assert first == client.parse_request(_body(ITEMS[:split]), {})
    resumed = client.parse_request(_body(ITEMS), {}, memo)
    whole = client.parse_request(_body(ITEMS), {})
    assert resumed == whole
    assert (resumed.minted, resumed.checkpoint, resumed.checkpoint_at) == \
        (whole.minted, whole.checkpoint, whole.checkpoint_at)
    assert resumed.dropped_to("openai-chat") == whole.dropped_to("openai-chat")


def test_a_resent_prefix_is_not_converted_again(monkeypatch: pytest.MonkeyPatch) -> None:
    converted = _counted(monkeypatch)
    memo = Memos().items("alice")
    client.parse_request(_body(ITEMS[:9]), {}, memo)
    assert len(converted) == 9
    converted.clear()
    client.parse_request(_body(ITEMS), {}, memo)
    assert converted == [f"input[{i}]" for i in range(9, len(ITEMS))]  # a hit: the new only
    converted.clear()
    client.parse_request(_body(ITEMS), {}, Memos().items("bob"))
    assert len(converted) == len(ITEMS)  # a miss: another memo converts all


def test_an_edit_is_converted_again_from_the_last_request_before_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    converted = _counted(monkeypatch)
    memo = Memos().items("alice")
    for count in (4, 8, 12):
        client.parse_request(_body(ITEMS[:count]), {}, memo)
    edited = [*ITEMS[:6], {"type": "function_call_output", "call_id": "c1", "output": "hail"},
              *ITEMS[7:]]
    converted.clear()
    resumed = client.parse_request(_body(edited), {}, memo)
    assert converted[0] == "input[4]"  # resumed where the request of 4 items ended, not at 8
    assert resumed == client.parse_request(_body(edited), {})
    assert "hail" in str(resumed.messages)


def test_a_compaction_trigger_and_a_string_input_go_through_the_memo() -> None:
    memo = Memos().items("alice")
    client.parse_request(_body(ITEMS[:5]), {}, memo)
    triggered = _body([*ITEMS[:8], {"type": "compaction_trigger"}])
    resumed = client.parse_request(triggered, {}, memo)
    assert resumed.compact and resumed == client.parse_request(triggered, {})
    text = {"model": "m", "input": "hi"}
    assert client.parse_request(text, {}, memo) == client.parse_request(text, {})
