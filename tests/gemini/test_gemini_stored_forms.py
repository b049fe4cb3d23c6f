"""Issue 17 on Gemini: a resumed session splices each turn's stored wire form (the core's wire
cache over ``codecs/gemini/turns.py``), byte-identical to a fresh encode, and uses a form only in
the context it was encoded under.

- a property over random histories with Gemini's native parts and plan changes: the spliced
  request equals a fresh encode of the same history, and nothing was decoded unless something
  forced it (an unanswered call);
- a corrupt stored form is reported and never sent;
- one tool-result turn (one content id) answering calls that differ in two sessions (another
  name, or a call sent as text) has a form per context: each session sends its own, spliced,
  and the request stays byte-identical;
- the request log's summary of a spliced request comes from the stored after facts (the body is
  not parsed), and a rejection of it teaches exactly what it teaches for the unspliced request.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from gemini_histories import (
    CHANGE,
    HISTORIES,
    LESSONS,
    PRO,
    PROVIDERS,
    SETUP,
    SIG,
    SIGNATURES,
    Setup,
    learn,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers_forms import FORM_FAILED, drop_stored_forms, forge_stored_form
from thoughtline import Session, open_store
from thoughtline.codecs.gemini.turns import Sent
from thoughtline.messages import Message, Reasoning, Text, ToolCall, ToolResult, tool_results, user
from thoughtline.replay import answered
from thoughtline.turn import TurnEngine
from thoughtline.wire.stored import Joined

PENDING = user("and the next step?")
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


def fresh(session: Session, history: list[Message]) -> bytes:
    """What the session's next request is when its history is encoded anew (a plain list, a new
    cache, the same model config and lessons)."""
    turn = replace(session._turn([PENDING]), history=list(history), cache=None)
    return TurnEngine.build(turn, stream=True)[0].raw


def splices(session: Session, history: list[Message]) -> bool:
    """Should a resume of ``history`` under the session's plan be spliced, nothing decoded? Not
    when a call is unanswered (the view is rebuilt from decoded turns). A turn shared by content
    id with a turn of another context (a result answering a call of another name) has a stored
    form of its own per context (the core's cache keys forms by context): it fits."""
    # (an empty stored history has nothing to decode: it counts as decoded)
    return bool(history) and isinstance(answered(history, [PENDING]), Joined)


@SETTINGS
@given(whole=HISTORIES, cut=st.integers(0, 64), setup=SETUP, other=CHANGE)
def test_a_spliced_resume_is_byte_identical_to_a_fresh_encode(
        tmp_path_factory, whole: list[Message], cut: int,  # type: ignore[no-untyped-def]
        setup: Setup, other: Setup) -> None:
    # Resumed after ``first``, the session goes on with ``then`` (often the results of calls
    # stored before the resume), is resumed again, and changes its plan.
    first, then = whole[:cut % (len(whole) + 1)], whole[cut % (len(whole) + 1):]
    home = tmp_path_factory.mktemp("gemini-forms")
    with open_store(home / "state.db", home) as store:
        session = Session.create(store, PROVIDERS[setup.provider or "pro"])
        setup.apply(session)
        session.append(first)
        resumed = Session.resume(store, session.id)
        assert resumed.request_bytes([PENDING], stream=True) == fresh(resumed, first)
        assert resumed._history.decoded is not splices(session, first)
        # Turns added after the resume: their forms are encoded against the calls the stored
        # turns made (read from their metas), and the next request splices on.
        decoded = resumed._history.decoded
        resumed.append(then)
        both = [*first, *then]
        assert resumed.request_bytes([PENDING], stream=True) == fresh(resumed, both)
        assert resumed._history.decoded is (decoded or not isinstance(
            answered(both, [PENDING]), Joined))
        again = Session.resume(store, session.id)
        assert again.request_bytes([PENDING], stream=True) == fresh(again, both)
        assert again._history.decoded is not splices(again, both)
        # A plan change re-encodes (correctly), stores every form anew, and splices next time.
        other.apply(again)
        assert again.request_bytes([PENDING], stream=True) == fresh(again, both)
        changed = Session.resume(store, session.id)  # the forms stored are the old plan's
        assert changed.request_bytes([PENDING], stream=True) == fresh(changed, both)
        again.append([user("more")])
        last = Session.resume(store, session.id)
        everything = [*both, user("more")]
        assert last.request_bytes([PENDING], stream=True) == fresh(last, everything)
        assert last._history.decoded is not splices(last, everything)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(whole=HISTORIES, setup=SETUP, lost=st.sets(st.integers(0, 40), max_size=3))
def test_a_resume_whose_forms_stop_mid_history_encodes_on_from_there(
        tmp_path_factory, whole: list[Message], setup: Setup,  # type: ignore[no-untyped-def]
        lost: set[int]) -> None:
    """Stored turns whose forms are gone: the resumed walk splices the turns before the first,
    in the state they leave (the calls made up to there: ids are reused by later calls of
    other names), and encodes from it on, as a fresh encode does."""
    home = tmp_path_factory.mktemp("gemini-lost")
    with open_store(home / "state.db", home) as store:
        session = Session.create(store, PROVIDERS[setup.provider or "pro"])
        setup.apply(session)
        session.append(whole)
        ids = list(session._ids or ())
    drop_stored_forms(home / "state.db", [ids[i] for i in sorted(lost) if i < len(ids)])
    more = [*whole, user("more")]
    with open_store(home / "state.db", home) as store:
        resumed = Session.resume(store, session.id)
        assert resumed.request_bytes([PENDING], stream=True) == fresh(resumed, whole)
        resumed.append([user("more")])
        assert resumed.request_bytes([PENDING], stream=True) == fresh(resumed, more)
        again = Session.resume(store, session.id)
        assert again.request_bytes([PENDING], stream=True) == fresh(again, more)


def test_a_lost_result_form_is_encoded_against_the_calls_made_before_it(tmp_path: Path) -> None:
    """The first result's form is gone, and a later call reuses its id under another name: the
    resumed walk stops at the result in the state before it (the first call's name), not in the
    state the turns after it leave."""
    whole = [user("go"),
             _call("c1", "lookup"), tool_results([ToolResult(call_id="c1", content="a")]),
             _call("c1", "weather"), tool_results([ToolResult(call_id="c1", content="b")])]
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS["pro"])
        session.append(whole)
        ids = list(session._ids or ())
    drop_stored_forms(tmp_path / "state.db", [ids[2]])
    with open_store(tmp_path / "state.db", tmp_path) as store:
        resumed = Session.resume(store, session.id)
        body = resumed.request_bytes([PENDING], stream=True)
        assert body == fresh(resumed, whole)
    assert body.count(b'"name":"lookup"') == 2 and body.count(b'"name":"weather"') == 2


def _call(call_id: str, name: str, signature: str | None = None, origin=PRO) -> Message:  # type: ignore[no-untyped-def]
    native = {"gemini": {SIG: signature}} if signature else {}
    return Message(role="assistant", origin=origin, parts=(
        ToolCall(id=call_id, name=name, arguments='{"city":"Rome"}', native=native),))


def _signed_turn() -> list[Message]:
    return [user("weather in Rome?"),
            Message(role="assistant", origin=PRO, parts=(
                Reasoning(kind="text", text="thinking", native={"gemini": {SIG: SIGNATURES[0]}}),
                ToolCall(id="call_1", name="weather", arguments='{"city":"Rome"}',
                         native={"gemini": {SIG: SIGNATURES[1]}}))),
            tool_results([ToolResult(call_id="call_1", content="sunny")]),
            Message(role="assistant", origin=PRO, parts=(
                Text(text="It is sunny.", native={"gemini": {SIG: SIGNATURES[2]}}),))]


def test_a_corrupt_wire_form_is_reported_and_never_sent(tmp_path: Path) -> None:
    history = _signed_turn()
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS["pro"])
        session.append(history)
    forge_stored_form(tmp_path / "state.db", b"It is sunny.", b"FORGED")
    with open_store(tmp_path / "state.db", tmp_path) as store:
        resumed = Session.resume(store, session.id)
        assert [p.detail for p in resumed.problems] == [FORM_FAILED]
        body = resumed.request_bytes([PENDING], stream=True)
        assert b"FORGED" not in body and b'"text":"It is sunny."' in body
        assert body == fresh(resumed, history)


@pytest.mark.parametrize("sides", ["another name", "sent as text"])
def test_a_form_encoded_in_another_context_is_not_used(tmp_path: Path, sides: str) -> None:
    # One tool-result turn (one content id, one stored row per plan) answers, in two sessions,
    # calls that differ: by name, or own (a functionResponse) against foreign and sent as text.
    # Each context has its own stored form: neither session sends the other's.
    setup = Setup("pro", "calls-as-text")  # foreign calls and their results go as text
    result = tool_results([ToolResult(call_id="call_1", content="sunny")])
    mine = [user("q"), _call("call_1", "weather", SIGNATURES[0]), result]
    if sides == "another name":
        theirs = [user("q2"), _call("call_1", "clock", SIGNATURES[1]), result]
    else:
        theirs = [user("q2"), _call("call_1", "weather", origin=None), result]
    with open_store(tmp_path / "state.db", tmp_path) as store:
        sessions = []
        for history in (mine, theirs):
            session = Session.create(store, PROVIDERS["pro"])
            setup.apply(session)
            session.append(history)
            sessions.append(session)
        resumed = Session.resume(store, sessions[0].id)
        body = resumed.request_bytes([PENDING], stream=True)
        assert body == fresh(resumed, mine)
        assert b'"functionResponse":{"name":"weather"' in body
        # One content id, two contexts, two stored forms: each session splices its own.
        assert resumed._history.decoded is False
        other = Session.resume(store, sessions[1].id)
        assert other.request_bytes([PENDING], stream=True) == fresh(other, theirs)
        assert other._history.decoded is False  # its own context: spliced
        # And so does its next resume, with a turn more.
        resumed.append([PENDING])
        again = Session.resume(store, sessions[0].id)
        assert again.request_bytes([PENDING], stream=True) == fresh(again, [*mine, PENDING])
        assert again._history.decoded is False


def test_turns_added_after_a_resume_answer_the_calls_stored_before_them(tmp_path: Path) -> None:
    head = [user("q"), _call("call_1", "weather", SIGNATURES[0])]
    tail = [tool_results([ToolResult(call_id="call_1", content="sunny")]),
            Message(role="assistant", origin=PRO, parts=(Text(text="Sunny."),))]
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS["pro"])
        session.append(head)
        resumed = Session.resume(store, session.id)
        resumed.append(tail)  # its form needs the call's name: read from the stored meta
        assert resumed._history.decoded is False
        again = Session.resume(store, session.id)
        body = again.request_bytes([PENDING], stream=True)
        assert again._history.decoded is False
        assert body == fresh(again, [*head, *tail])
    assert b'"functionResponse":{"name":"weather","response":{"output":"sunny"},"id":"call_1"}' \
        in body


def test_forms_stored_before_every_call_had_to_be_signed_are_not_spliced_after(
        tmp_path: Path) -> None:
    # Gemini's own unsigned call (the second of a step) and a foreign step of two calls: with
    # the learned setting every one of them carries the dummy, which the stored forms lack.
    history = [user("q"), Message(role="assistant", origin=PRO, parts=(
        ToolCall(id="call_1", name="weather", arguments="{}", native={"gemini": {SIG: "s1"}}),
        ToolCall(id="call_2", name="clock", arguments="{}"))),
        tool_results([ToolResult(call_id="call_1", content="a"),
                      ToolResult(call_id="call_2", content="b")]),
        user("q2"), Message(role="assistant", parts=(
            ToolCall(id="x_1", name="weather", arguments="{}"),
            ToolCall(id="x_2", name="clock", arguments="{}"))),
        tool_results([ToolResult(call_id="x_1", content="c"),
                      ToolResult(call_id="x_2", content="d")])]
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS["pro"])
        session.append(history)
        resumed = Session.resume(store, session.id)
        before = resumed.request_bytes([PENDING], stream=True)
        learn(resumed, "sign-every")
        after = resumed.request_bytes([PENDING], stream=True)
        assert after == fresh(resumed, history) != before
        assert after.count(b"skip_thought_signature_validator") == 3
        resumed.append([user("more")])  # the plan changed: every form is stored anew
        again = Session.resume(store, session.id)
        assert again.request_bytes([PENDING], stream=True) == fresh(
            again, [*history, user("more")])
        assert again._history.decoded is False


REJECTIONS = {
    "corrupted": '{"error":{"code":400,"message":"Corrupted thought signature.",'
                 '"status":"INVALID_ARGUMENT"}}',
    "missing": '{"error":{"code":400,"message":"Function call is missing a thought_signature '
               'in functionCall parts.","status":"INVALID_ARGUMENT"}}',
    "other": '{"error":{"code":400,"message":"Request contains an invalid argument.",'
             '"status":"INVALID_ARGUMENT"}}',
}


@pytest.mark.parametrize("wording", sorted(REJECTIONS))
@pytest.mark.parametrize("setup", [*(Setup("pro", lesson) for lesson in LESSONS),
                                   Setup("flash", "none"), Setup("vertex", "none")],
                         ids=lambda s: s.name)
def test_summary_and_rejections_of_a_spliced_request_are_those_of_the_unspliced_one(
        tmp_path: Path, wording: str, setup: Setup) -> None:
    history = [*_signed_turn(), user("and Oslo?"), _call("call_2", "weather", origin=None),
               tool_results([ToolResult(call_id="call_2", content="rain")])]
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS["pro"])
        setup.apply(session)
        session.append(history)
        resumed = Session.resume(store, session.id)
        spliced, plan = TurnEngine.build(resumed._turn([PENDING]), stream=True)
        assert isinstance(spliced.index, Sent)  # what the request carried, read from its turns
        codec = resumed.codec
        summary = codec.summary(spliced)
        assert spliced._body is None  # the log's counts came from the metas, not the body
        plain, _ = TurnEngine.build(replace(resumed._turn([PENDING]), history=history,
                                            cache=None), stream=True)
        assert spliced.raw == plain.raw
        assert summary == codec.summary(plain)
        assert summary["carriers"] or setup.name != "pro+none"
        assert resumed._history.decoded is False
        body = REJECTIONS[wording]
        assert codec.classify(400, body, spliced, plan) == codec.classify(400, body, plain, plan)
        assert codec.classify(503, body, spliced, plan) is None
