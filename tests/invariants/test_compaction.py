"""Compaction never cuts between a tool call and its result.

Whatever the history's shape — Chat-style results (one ``tool`` message per call, so two calls
answer in two messages), results in one user message or (imported) in several, a call whose
results never came — no cut point offered by ``cut_points`` leaves a call in the summarized head
and one of its results in the kept tail, or a result in the head whose call stays in the tail.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from thoughtline.compaction import cut_points
from thoughtline.messages import Message, Reasoning, Text, ToolCall, ToolResult, user


def _calling(*ids: str) -> Message:
    return Message(role="assistant", parts=(
        Reasoning(kind="signed", text="t", signature="s"),
        *(ToolCall(id=i, name="f", arguments="{}") for i in ids)))


def _tool(call_id: str) -> Message:
    return Message(role="tool", parts=(ToolResult(call_id=call_id, content="ok"),))


def _results(*ids: str) -> Message:
    return Message(role="user", parts=tuple(ToolResult(call_id=i, content="ok") for i in ids))


def _answer() -> Message:
    return Message(role="assistant", parts=(Text(text="done"),))


def _split(history: list[Message], cut: int) -> list[str]:
    """Call ids separated from one of their results (or results from their call) by ``cut``."""
    head_calls = {c.id for m in history[:cut] for c in m.tool_calls}
    tail_calls = {c.id for m in history[cut:] for c in m.tool_calls}
    head_results = {r.call_id for m in history[:cut] for r in m.tool_results}
    tail_results = {r.call_id for m in history[cut:] for r in m.tool_results}
    return sorted((head_calls & tail_results) | (tail_calls & head_results))


def test_parallel_results_in_separate_messages_stay_together() -> None:
    history = [user("q0"), _calling("a", "b"), _tool("a"), _tool("b"), _answer(),
               user("q1"), _answer(), user("q2")]
    cuts = cut_points(history)
    assert 3 not in cuts  # between the two results of one step
    assert cuts and all(_split(history, c) == [] for c in cuts)
    assert cuts == [1, 4, 5, 6, 7]


def test_results_split_over_user_messages_stay_together() -> None:
    history = [user("q0"), _calling("a", "b"), _results("a"), _results("b"), _answer(),
               user("q1")]
    assert 3 not in cut_points(history)


def test_a_call_whose_results_never_came_stays_with_what_follows() -> None:
    history = [user("q0"), _calling("a"), user("q1"), _answer(), user("q2")]
    assert 2 not in cut_points(history)


@st.composite
def _histories(draw: Any) -> list[Message]:
    out: list[Message] = []
    for n in range(draw(st.integers(1, 6))):
        out.append(user(f"q{n}"))
        for step in range(draw(st.integers(0, 2))):
            ids = [f"c{n}-{step}-{k}" for k in range(draw(st.integers(1, 3)))]
            out.append(_calling(*ids))
            shape = draw(st.sampled_from(["tool", "user", "users", "tool", "user", "none"]))
            if shape == "tool":  # Chat: one tool message per result
                out.extend(_tool(i) for i in ids)
            elif shape == "user":  # Anthropic: one user message holding every result
                out.append(_results(*ids))
            elif shape == "users":  # an imported history: one user message per result
                out.extend(_results(i) for i in ids)
            else:
                break  # the results never came
        if draw(st.booleans()):
            out.append(_answer())
    return out


@given(_histories())
def test_no_cut_point_separates_a_call_from_its_results(history: list[Message]) -> None:
    for cut in cut_points(history):
        assert _split(history, cut) == [], cut
