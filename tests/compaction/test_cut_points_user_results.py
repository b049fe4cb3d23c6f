"""Cut points when tool results come in user messages (Anthropic's and Gemini's shape).

The current tool loop starts after the last user message that is not only tool results
(``replay.loop_start``); a cut never falls inside it. Seeded mutant M93 (issue 47) reads every
user message as a question and survived every other compaction test: they carry results in
``tool`` messages, the Chat shape, where the bug cannot show.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from thoughtline.compaction.core import cut_points
from thoughtline.messages import Message, Text, ToolCall, ToolResult, tool_results, user


def _answer(text: str) -> Message:
    return Message(role="assistant", parts=(Text(text=text),))


def _call(call_id: str) -> Message:
    return Message(role="assistant", parts=(ToolCall(id=call_id, name="f", arguments="{}"),))


def _results_in_user(call_id: str, *, said: str = "") -> Message:
    parts = (ToolResult(call_id=call_id, content="r"),) + ((Text(text=said),) if said else ())
    return Message(role="user", parts=parts)


def _results_in_tool(call_id: str) -> Message:
    return tool_results([ToolResult(call_id=call_id, content="r")])


@pytest.mark.parametrize("results", [_results_in_user, _results_in_tool],
                         ids=["user-message", "tool-message"])
def test_no_cut_falls_inside_the_current_tool_loop(results: Callable[[str], Message]) -> None:
    history = [user("q0"), _answer("a0"), user("q1"),  # the loop opens after "q1" (index 2)
               _call("c1"), results("c1"), _call("c2"), results("c2")]
    assert cut_points(history) == [1, 2]


def test_a_user_message_with_results_and_words_opens_a_new_loop() -> None:
    # The other direction: a message that says something beside its results is a question,
    # so the exchange before it may be summarized.
    history = [user("q0"), _answer("a0"), user("q1"), _call("c1"),
               _results_in_user("c1", said="and Berlin?"),  # opens the loop (index 4)
               _call("c2"), _results_in_user("c2")]
    assert cut_points(history) == [1, 2, 3]
