"""Cut-point rules: a compaction never separates a tool call from its results, a thinking block
from the turn it precedes, or the turns of the current tool loop (docs/compaction.md)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from thoughtline.compaction import CompactionRules, checkpoint, cut_points, is_checkpoint
from thoughtline.messages import (
    Message,
    Opaque,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    system,
    user,
)
from thoughtline.replay import loop_start


def think(text: str = "hmm") -> Reasoning:
    return Reasoning(kind="signed", text=text, signature="sig-" + text)


def calling(call_id: str) -> Message:
    return Message(role="assistant", parts=(think(), ToolCall(id=call_id, name="t",
                                                               arguments="{}")))


def results(call_id: str) -> Message:
    return Message(role="tool", parts=(ToolResult(call_id=call_id, content="ok"),))


def answer(text: str = "answer") -> Message:
    return Message(role="assistant", parts=(think(), Text(text=text)))


def thinking_only() -> Message:
    return Message(role="assistant", parts=(think("between"),))


def test_cuts_fall_between_exchanges_never_between_a_call_and_its_results() -> None:
    history = [system("s"), user("q0"), calling("a"), results("a"), answer(),
               user("q1"), calling("b"), results("b"), answer(), user("q2"), calling("c"),
               results("c")]
    # index:    0          1           2              3              4
    #           5          6              7              8          9           10
    #           11 — the current tool loop starts at 10 (after the user message at 9)
    assert loop_start(history) == 10
    cuts = cut_points(history)
    # never 3 or 7 (results away from their call), 10/11 (the loop in progress) or 1 (an empty
    # head: only the system message would be summarized)
    assert cuts == [2, 4, 5, 6, 8, 9]
    for c in cuts:
        assert history[c].role != "tool" and not history[c - 1].tool_calls


def test_the_current_tool_loop_stays_whole_with_the_message_that_opened_it() -> None:
    history = [user("q0"), answer(), user("q1"), calling("a"), results("a"), calling("b"),
               results("b")]
    assert cut_points(history) == [1, 2]  # never 3..6: they are the loop in progress
    pending = [Message(role="tool", parts=(ToolResult(call_id="b", content="x"),))]
    assert cut_points(history[:-1], pending) == [1, 2]
    # a new plain user message closes the loop: now everything before it may go
    assert cut_points(history, [user("q2")]) == [1, 2, 3, 5, 7]


def test_a_thinking_only_turn_stays_with_the_turn_it_precedes() -> None:
    history = [user("q0"), thinking_only(), calling("a"), results("a"), answer(), user("q1"),
               answer()]
    assert 2 not in cut_points(history)
    assert cut_points(history) == [1, 4, 5]


def test_a_turn_scoped_system_message_stays_in_place_with_the_turn_it_precedes() -> None:
    # Anthropic's mid-conversation role:system (with output_config): never moved or reworded
    # (docs/claude-code.md), so a cut never leaves it at the end of the summarized head.
    scoped = Message(role="system", parts=(Text(text="From now on, answer in French."),),
                     native={"anthropic": {"in_place": True,
                                           "output_config": {"effort": "low"}}})
    history = [system("s"), user("q0"), answer(), scoped, user("q1"), answer(), user("q2"),
               answer()]
    cuts = cut_points(history)
    assert 4 not in cuts  # history[3] is the scoped message: it goes where its turn goes
    assert cuts == [2, 3, 5, 6]


def test_position_critical_items_alone_stay_with_the_turn_they_precede() -> None:
    # A Responses configuration_update / program item, or a compaction item, on its own
    # (openai-python types/responses): it belongs to what follows it, so no cut leaves it at the end
    # of the summarized head; an item of another namespace, or a text turn, pins nothing.
    def items(*kinds: str, ns: str = "openai-responses") -> Message:
        return Message(role="assistant", parts=tuple(
            Opaque(native={ns: {"type": k, "id": f"{k}_1"}}) for k in kinds))

    for pinned in (items("configuration_update"), items("program"), items("compaction"),
                   items("compaction", ns="anthropic")):
        history = [user("q0"), answer(), pinned, user("q1"), answer(), user("q2"), answer()]
        assert cut_points(history) == [1, 2, 4, 5], pinned
    loose = items("web_search_call")
    history = [user("q0"), answer(), loose, user("q1"), answer(), user("q2"), answer()]
    assert cut_points(history) == [1, 2, 3, 4, 5]


def test_whole_exchanges_cut_only_before_a_user_message() -> None:
    history = [user("q0"), answer(), answer("more"), user("q1"), answer()]
    assert cut_points(history) == [1, 2, 3]
    assert cut_points(history, rules=CompactionRules(whole_exchanges=True)) == [3]


def test_leading_system_messages_and_an_old_checkpoint_are_never_the_tail_start() -> None:
    old = checkpoint("before")
    history = [system("s1"), system("s2"), old, answer(), user("q"), answer()]
    assert is_checkpoint(old) and not is_checkpoint(user("x"))
    cuts = cut_points(history)
    assert cuts == [3, 4] and all(c > 2 for c in cuts)


def test_a_history_that_is_all_one_tool_loop_has_no_cut() -> None:
    assert cut_points([calling("a"), results("a"), calling("b")]) == []
    assert cut_points([user("q"), calling("a"), results("a")]) == []


# --- property: every cut respects every rule, on random histories -----------------------------

@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = [system("s")] if draw(st.booleans()) else []
    for i in range(draw(st.integers(1, 12))):
        out.append(user(f"q{i}"))
        for j in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                out.append(thinking_only())
            out.append(calling(f"c{i}-{j}"))
            if draw(st.integers(0, 5)):  # now and then a call nobody answered
                out.append(results(f"c{i}-{j}"))
        if draw(st.booleans()):
            out.append(answer(f"a{i}"))
    return out


@given(histories(), st.booleans())
def test_every_cut_point_keeps_calls_thinking_and_the_current_loop_together(
        history: list[Message], whole: bool) -> None:
    rules = CompactionRules(whole_exchanges=whole)
    last_user = loop_start(history) - 1
    for c in cut_points(history, rules=rules):
        head, tail = history[:c], history[c:]
        assert any(m.role != "system" for m in head)  # something to summarize
        assert c <= last_user  # the loop in progress and its opening message stay
        called = {t.id for m in head for t in m.tool_calls}
        assert not {r.call_id for m in tail for r in m.tool_results} & called
        before = history[c - 1]
        assert not (before.role == "assistant" and before.reasoning and not before.text
                    and not before.tool_calls)
        if whole:
            assert tail and tail[0].role == "user"


def test_a_transcript_over_the_summarizers_budget_keeps_the_earlier_summary_and_the_newest(
) -> None:
    from thoughtline.compaction import summary_prompt

    head = [checkpoint("EARLIER"), *[m for i in range(40) for m in (user(f"q{i} " * 50),
                                                                   answer(f"a{i}"))]]
    whole = summary_prompt(head, reasoning=True)[-1].text
    fitted = summary_prompt(head, reasoning=True, budget=300)[-1].text
    assert "left out" not in whole and "q0 " in whole
    assert "EARLIER" in fitted and "a39" in fitted and "q0 " not in fitted
    assert "earlier items left out to fit the summarizer's context" in fitted
    assert len(fitted) < len(whole) / 4
