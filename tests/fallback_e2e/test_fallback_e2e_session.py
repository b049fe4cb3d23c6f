"""The learn-once fallback through ``Session`` on loopback emulators (docs/design.md).

Every scenario counts the requests the emulator actually received: a rejected request is retried
exactly once with the narrowed (or padded) request copy, the verdict is persisted in the session's
model config and in the store's ledger, and the stored history is never touched.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fallback_e2e_support import (
    CEREBRAS_RC,
    DEEPSEEK_MISSING,
    DEEPSEEK_PASS_BACK,
    GROQ_R,
    GROQ_RC,
    KIMI_MISSING,
    LOOKUP,
    MISTRAL_RC,
    PAD,
    RC,
    RD,
    RELAY_RD,
    TEMPERATURE,
    UNKNOWN_FIELD_RC,
    UNKNOWN_FIELD_RD,
    UNKNOWN_KEY_RD,
    R,
    answer_call,
    any_carrier,
    assistants,
    body_text,
    carried,
    create,
    provider_at,
    request_log,
    resume,
    send,
    statuses,
    store_at,
    stored,
)

from thoughtline.codecs.openai_chat import rejections as fallback
from thoughtline.messages import Message, Origin, ToolCall, ToolResult, dumps, tool_results
from thoughtline.replay import Verdict
from thoughtline.session import Session
from thoughtline.testing import ChatEmulator
from thoughtline.transport import TransportConfig

Start = Callable[[str], ChatEmulator]
STRICT_DROP = frozenset({RC, R})  # a local-endpoint route sends RC + R; RC named drops both
NO_RETRIES = TransportConfig(max_retries=0)


def strict_session(emulator: Start, home: Path) -> tuple[ChatEmulator, Session]:
    """A tool-calling session on the strict server the route table thinks is a local server."""
    emu = emulator("strict-custom")
    session = create(store_at(home), provider_at(emu), tools=[LOOKUP],
                     system="You look things up.", log=request_log(home))
    assert session.route.row == "local-endpoint"
    assert session.route.profile.carriers == STRICT_DROP and not session.route.profile.must_echo
    return emu, session


def learn_on_strict(emulator: Start, home: Path) -> tuple[ChatEmulator, Session]:
    """A strict session that has just learned its verdict (turn 1 call, turn 2 rejected + retry)."""
    emu, session = strict_session(emulator, home)
    assert send(session, "weather in Paris").error is None
    outcome = send(session, answer_call(session, "sunny"))
    assert outcome.error is None, outcome.error
    assert statuses(emu.received) == [200, 400, 200]
    return emu, session


# --- unknown field: learn to drop, exactly once ---------------------------------------------------


def test_a_turn_allowed_one_request_learns_without_a_retry(emulator: Start, home: Path) -> None:
    """A turn sent again after a compaction has one request left (``TurnOptions.requests``): a
    rejection that teaches something is learned and raised, never retried, so a turn never
    costs more than two requests plus the summary's."""
    emu, session = strict_session(emulator, home)
    assert send(session, "weather in Paris").error is None
    outcome = send(session, answer_call(session, "sunny"), requests=1)
    assert outcome.error is not None and outcome.error.status == 400
    assert outcome.error.attempts == 1
    assert statuses(emu.received) == [200, 400]  # no retry went out
    assert session.verdicts and session.verdicts[0].drop == STRICT_DROP  # but it was learned
    again = send(session, answer_call(session, "sunny"))
    assert again.error is None and statuses(emu.received) == [200, 400, 200]
    assert carried(emu.received[-1]) == [frozenset()]


def test_first_rejection_costs_exactly_two_requests_and_the_second_lacks_the_field(
        emulator: Start, home: Path) -> None:
    emu, session = strict_session(emulator, home)

    first = send(session, "weather in Paris")
    assert first.error is None and first.notices == []
    assert first.done.message.tool_calls  # the model called the tool
    assert statuses(emu.received) == [200]

    retried = send(session, answer_call(session, "sunny, 21 °C"))
    assert retried.error is None
    rejected, retry = emu.received[1:]
    assert (rejected.status, retry.status) == (400, 200)
    assert carried(rejected) == [STRICT_DROP]  # the strict server saw both carriers once …
    assert carried(retry) == [frozenset()]  # … and the retry carries none of them
    # Only the carriers differ: the same turns, the same tools, the rest of the body equal.
    assert [{k: v for k, v in m.items() if k not in STRICT_DROP}
            for m in rejected.body["messages"]] == retry.body["messages"]
    assert {k: v for k, v in rejected.body.items() if k != "messages"} == \
        {k: v for k, v in retry.body.items() if k != "messages"}

    # One single-line notice, the fallback's own words.
    verdict = Verdict(provider="custom", host="127.0.0.1", model="relay-model", drop=STRICT_DROP,
                      reason="rejected replayed reasoning_content and reasoning as unsupported "
                             "properties")
    assert retried.notices == [fallback.describe(
        fallback.Classification(action="drop", drop=frozenset(fallback.CARRIERS),
                                reason=verdict.reason), model="relay-model")]
    assert "\n" not in retried.notices[0]
    assert "retrying without any replayed reasoning for this model" in retried.notices[0]

    # Persisted: the session's model config (in memory and stored) and the global ledger.
    assert session.verdicts == (verdict,)
    assert session.store.get_session(session.id).model_config["verdicts"] == [verdict.to_json()]
    assert session.store.verdicts() == [verdict]

    # Every later request of the session: no carrier, no 400, one request per turn.
    for turn in ("and in Rome?", None, "thanks"):
        before = len(emu.received)
        outcome = send(session, answer_call(session) if turn is None else turn)
        assert outcome.error is None and outcome.notices == []
        assert statuses(emu.received[before:]) == [200]
        assert any_carrier(emu.received[-1]) == frozenset()
    assert statuses(emu.received).count(400) == 1

    # The request log: the rejection, then the retry carrying the verdict.
    records = list(request_log(home).read(session=session.id))
    assert [(r["status"], r["attempt"]) for r in records] == [
        (200, 1), (400, 1), (200, 2), (200, 1), (200, 1), (200, 1)]
    assert records[1]["carriers"] == {RC: 1, R: 1} and records[1]["verdicts"] == []
    assert records[2]["carriers"] == {} and records[2]["verdicts"] == [verdict.to_json()]
    assert all(r["verdicts"] == [] for r in records[3:])


def test_without_streaming_the_fallback_is_the_same(emulator: Start, home: Path) -> None:
    emu, session = strict_session(emulator, home)
    assert send(session, "weather in Paris", stream=False).error is None
    outcome = send(session, answer_call(session), stream=False)
    assert outcome.error is None and len(outcome.notices) == 1
    assert statuses(emu.received) == [200, 400, 200]
    assert [r.body.get("stream", False) for r in emu.received] == [False] * 3
    assert carried(emu.received[1]) == [STRICT_DROP] and carried(emu.received[2]) == [frozenset()]
    assert send(session, "and Rome?", stream=False).error is None
    assert statuses(emu.received).count(400) == 1


def test_switching_the_session_to_a_sibling_model_sends_every_carrier_again(
        emulator: Start, home: Path) -> None:
    emu, session = learn_on_strict(emulator, home)
    session.set_model("relay-model-mini")
    outcome = send(session, "and Rome?")
    # The sibling was never rejected, so it carries RC + R — and this server teaches it too.
    assert statuses(emu.received[3:]) == [400, 200]
    assert carried(emu.received[3]) == [STRICT_DROP, STRICT_DROP]
    assert len(outcome.notices) == 1 and outcome.notices[0].startswith("relay-model-mini ")
    assert [v.model for v in session.verdicts] == ["relay-model", "relay-model-mini"]
    session.set_model("relay-model")
    assert send(session, "thanks").error is None
    assert statuses(emu.received[5:]) == [200]


@pytest.mark.parametrize("keep_ledger", [True, False], ids=["with-ledger", "ledger-forgotten"])
def test_resumed_session_in_a_restarted_store_sends_no_rejected_field_and_sees_no_400(
        emulator: Start, home: Path, keep_ledger: bool) -> None:
    emu, session = learn_on_strict(emulator, home)
    session.store.close()

    store = store_at(home)  # what a restarted process opens
    if not keep_ledger:
        assert store.forget_verdicts() == 1  # the session's own copy must be enough
    resumed = resume(store, session.id, log=request_log(home))
    assert resumed.verdicts == session.verdicts
    before = len(emu.received)
    for turn in ("what about Oslo?", None, "and Lima?", None):
        outcome = send(resumed, answer_call(resumed) if turn is None else turn)
        assert outcome.error is None and outcome.notices == []
    after = emu.received[before:]
    assert statuses(after) == [200] * 4  # no 400 at all
    assert all(any_carrier(r) == frozenset() for r in after)
    assert [len(assistants(r)) for r in after] == [2, 3, 4, 5]  # the history really was replayed


def test_a_brand_new_session_starts_from_the_ledger(emulator: Start, home: Path) -> None:
    emu, _ = learn_on_strict(emulator, home)
    fresh = create(store_at(home), provider_at(emu), tools=[LOOKUP])
    assert fresh.verdicts == ()  # nothing copied into its own config …
    before = len(emu.received)
    for turn in ("weather in Paris", None, "and Rome?"):
        outcome = send(fresh, answer_call(fresh) if turn is None else turn)
        assert outcome.error is None and outcome.notices == []
    assert statuses(emu.received[before:]) == [200, 200, 200]  # … yet the ledger applies
    assert all(any_carrier(r) == frozenset() for r in emu.received[before:])


@pytest.mark.parametrize(("provider_id", "model"), [
    ("custom", "relay-model-mini"),  # another model on the same host
    ("relay2", "relay-model"),  # the same model under another provider id
], ids=["sibling-model", "other-provider-id"])
def test_sibling_on_the_same_host_keeps_every_carrier(emulator: Start, home: Path,
                                                      provider_id: str, model: str) -> None:
    learn_on_strict(emulator, home)
    lenient = emulator("plain")  # another port, the same host 127.0.0.1

    sibling = create(store_at(home), provider_at(lenient, provider_id, model))
    assert (sibling.route.host, sibling.route.row) == ("127.0.0.1", "local-endpoint")
    for turn in ("hello", "again", "once more"):
        assert send(sibling, turn).error is None
    assert statuses(lenient.received) == [200, 200, 200]
    assert carried(lenient.received[1]) == [STRICT_DROP]
    assert carried(lenient.received[2]) == [STRICT_DROP, STRICT_DROP]
    assert sibling.verdicts == ()  # nothing learned about the sibling
    assert [v.key for v in sibling.store.verdicts()] == [("custom", "127.0.0.1", "relay-model")]

    # Control: the learned key itself, on the same lenient server, does drop them.
    same = create(store_at(home), provider_at(lenient))
    for turn in ("hello", "again"):
        assert send(same, turn).error is None
    assert carried(lenient.received[-1]) == [frozenset()]


# --- widening: R and RD go together ---------------------------------------------------------------


@pytest.mark.parametrize("body", [RELAY_RD, UNKNOWN_FIELD_RD, UNKNOWN_KEY_RD, GROQ_R],
                         ids=["relay-rd", "unknown-field-rd", "unknown-key-rd", "groq-r"])
def test_naming_reasoning_or_details_drops_both_and_keeps_reasoning_content(
        emulator: Start, home: Path, body: object) -> None:
    emu = emulator("openrouter")
    session = create(store_at(home), provider_at(emu, "openrouter", "openai/gpt-5"))
    assert session.route.profile.carriers == {RC, R, RD}
    assert send(session, "hello").error is None
    thought = session.history[-1].reasoning_text()
    assert thought.strip()

    emu.fail_next(400, body)
    outcome = send(session, "again")
    assert outcome.error is None
    rejected, retry = emu.received[1:]
    assert (rejected.status, retry.status) == (400, 200)  # one retry, not one per carrier
    assert carried(rejected) == [frozenset({RC, R, RD})]
    assert carried(retry) == [frozenset({RC})]
    assert assistants(retry)[0][RC] == thought  # the stored reasoning, untouched
    assert session.verdicts[0].drop == {R, RD} and not session.verdicts[0].pad
    assert len(outcome.notices) == 1
    assert "retrying without reasoning and reasoning_details" in outcome.notices[0]

    assert send(session, "third").error is None
    assert statuses(emu.received) == [200, 400, 200, 200]
    assert carried(emu.received[-1]) == [frozenset({RC})] * 2


# --- must-echo: a body naming reasoning_content is a value complaint ------------------------------


@pytest.mark.parametrize("body", [UNKNOWN_FIELD_RC, CEREBRAS_RC, MISTRAL_RC, DEEPSEEK_PASS_BACK],
                         ids=["unknown-field", "unsupported-property", "extra-forbidden",
                              "must-be-passed-back"])
def test_must_echo_complaint_about_reasoning_content_records_nothing_and_surfaces(
        emulator: Start, home: Path, body: object) -> None:
    emu = emulator("deepseek")
    session = create(store_at(home), provider_at(emu, "deepseek", "deepseek-reasoner"),
                     tools=[LOOKUP])
    assert session.route.profile.must_echo
    assert send(session, "find the answer").error is None
    assert send(session, answer_call(session)).error is None
    history = stored(session.store, session.id)
    in_memory = session.history

    emu.fail_next(400, body)
    outcome = send(session, "and now?")
    assert statuses(emu.received) == [200, 200, 400]  # exactly one request for this turn
    assert any_carrier(emu.received[-1]) == {RC}  # it was sent (and padded/echoed) …
    assert outcome.error is not None and outcome.notices == []  # … and the error surfaces
    assert (outcome.error.status, outcome.error.body) == (400, body_text(body))
    assert session.verdicts == ()
    assert session.store.get_session(session.id).model_config["verdicts"] == []
    assert session.store.verdicts() == []
    assert stored(session.store, session.id) == history and session.history == in_memory

    assert send(session, "and now?").error is None  # nothing was narrowed: RC still echoed
    assert carried(emu.received[-1]) == [frozenset({RC})] * 2


# --- reasoning required: learn the pad ------------------------------------------------------------


def _bare_tool_turn(call_id: str) -> list[Message]:
    """An assistant tool call without any reasoning (as imported from elsewhere) and its result."""
    bare = Message(role="assistant",
                   parts=(ToolCall(id=call_id, name="lookup", arguments='{"query": "b"}'),),
                   origin=Origin(api="openai-chat", provider="custom", host="127.0.0.1",
                                 model="relay-model"))
    return [bare, tool_results([ToolResult(call_id=call_id, content="B")])]


@pytest.mark.parametrize(("personality", "injected"), [
    ("deepseek", None),  # Missing `reasoning_content` field in the assistant message …
    ("kimi", None),  # thinking is enabled but reasoning_content is missing in …
    ("mimo", None),  # MiMo: DeepSeek's wording
    ("deepseek", DEEPSEEK_PASS_BACK),  # The `reasoning_content` … must be passed back
])
def test_reasoning_required_teaches_the_pad_for_that_model(
        emulator: Start, home: Path, personality: str, injected: object) -> None:
    emu = emulator(personality)
    store = store_at(home)
    # "custom" at a loopback URL: a local-endpoint route (RC + R) that does not pad.
    session = create(store, provider_at(emu), tools=[LOOKUP])
    assert not session.route.profile.must_echo and RC in session.route.profile.carriers
    assert send(session, "find a").error is None
    assert send(session, answer_call(session, "A")).error is None
    store.append(session.id, _bare_tool_turn("call_bare0001"))
    session = resume(store, session.id, log=request_log(home))
    history = stored(store, session.id)
    thoughts = [m.reasoning_text() for m in session.history if m.role == "assistant"]
    assert [bool(t.strip()) for t in thoughts] == [True, True, False]

    in_memory = [dumps(m) for m in session.history]
    if injected is not None:
        emu.fail_next(400, injected)
    outcome = send(session, "go on")
    assert outcome.error is None, outcome.error
    rejected, retry = emu.received[2:]
    assert (rejected.status, retry.status) == (400, 200)
    assert [m.get(RC) for m in assistants(rejected)] == [*thoughts[:2], None]
    assert [m.get(RC) for m in assistants(retry)] == [*thoughts[:2], PAD]
    assert R not in assistants(retry)[2]  # the pad is a reasoning_content value only
    verdict = Verdict(provider="custom", host="127.0.0.1", model="relay-model", pad=True,
                      reason="requires reasoning_content on assistant turns")
    assert session.verdicts == (verdict,)
    assert store.get_session(session.id).model_config["verdicts"] == [verdict.to_json()]
    assert store.verdicts() == [verdict]
    assert outcome.notices == ["relay-model requires reasoning_content on assistant turns — "
                               "retrying with the placeholder for this model"]
    # The pad lives in the request copy only: neither the stored rows nor the session's
    # in-memory history (what the next request is built from) were rewritten (issue 10).
    assert stored(store, session.id)[:len(history)] == history
    assert [dumps(m) for m in session.history[:len(in_memory)]] == in_memory
    assert not any(p.text == PAD for m in session.history for p in m.reasoning)

    # Persisted: a restarted process with the ledger cleared sees no 400 at all.
    store.close()
    store = store_at(home)
    store.forget_verdicts()
    resumed = resume(store, session.id)
    before = len(emu.received)
    assert send(resumed, "and then?").error is None
    assert statuses(emu.received[before:]) == [200]
    assert [m.get(RC) for m in assistants(emu.received[-1])][:3] == [*thoughts[:2], PAD]


# --- nothing new learned: the error surfaces unchanged --------------------------------------------


def plain_session(emulator: Start, home: Path) -> tuple[ChatEmulator, Session]:
    emu = emulator("plain")
    session = create(store_at(home), provider_at(emu))
    assert send(session, "hello").error is None
    return emu, session


def test_the_same_rejection_on_the_retry_surfaces_and_then_costs_one_request(
        emulator: Start, home: Path) -> None:
    emu, session = plain_session(emulator, home)
    history = stored(session.store, session.id)

    emu.fail_next(400, GROQ_RC)
    emu.fail_next(400, GROQ_R)
    outcome = send(session, "again")
    assert statuses(emu.received[1:]) == [400, 400]  # one retry, never a third request
    assert carried(emu.received[1]) == [STRICT_DROP] and carried(emu.received[2]) == [frozenset()]
    assert outcome.error is not None and len(outcome.notices) == 1
    assert (outcome.error.status, outcome.error.body) == (400, body_text(GROQ_R))
    assert outcome.error.attempts == 2  # the turn spent both its requests
    assert session.verdicts[0].drop == STRICT_DROP  # learned stays learned
    assert stored(session.store, session.id) == history  # a failed turn stores nothing

    # The same rejection again: nothing is sent that it could name → one request, unchanged.
    emu.fail_next(400, GROQ_RC)
    again = send(session, "again")
    assert statuses(emu.received[3:]) == [400]
    assert again.error is not None and again.notices == []
    assert (again.error.status, again.error.body) == (400, body_text(GROQ_RC))
    assert session.store.verdicts() == list(session.verdicts)
    assert stored(session.store, session.id) == history


def test_a_second_lesson_in_the_same_turn_gets_no_third_request(emulator: Start,
                                                                 home: Path) -> None:
    emu = emulator("openrouter")
    session = create(store_at(home), provider_at(emu, "openrouter", "openai/gpt-5"))
    assert send(session, "hello").error is None
    emu.fail_next(400, RELAY_RD)  # teaches: drop reasoning + reasoning_details
    emu.fail_next(400, UNKNOWN_FIELD_RC)  # would teach more, but the turn's retry is spent
    outcome = send(session, "again")
    assert statuses(emu.received) == [200, 400, 400]
    assert carried(emu.received[2]) == [frozenset({RC})]  # the retry did carry what it names
    assert outcome.error is not None and len(outcome.notices) == 1
    assert (outcome.error.status, outcome.error.body) == (400, body_text(UNKNOWN_FIELD_RC))


@pytest.mark.parametrize(("status", "body"), [
    (400, TEMPERATURE),  # a value error, not an unknown field
    (400, {"error": {"message": "Provider returned error", "code": 400}}),
    (500, GROQ_RC),  # a rejection wording on a 5xx is not a rejection
    (404, {"error": {"message": "The model `relay-model` does not exist."}}),
])
def test_a_non_rejection_surfaces_after_one_request(emulator: Start, home: Path, status: int,
                                                     body: object) -> None:
    emu, session = plain_session(emulator, home)
    emu.fail_next(status, body)
    outcome = send(session, "again", config=NO_RETRIES)
    assert statuses(emu.received) == [200, status]
    assert outcome.error is not None and outcome.notices == []
    assert (outcome.error.status, outcome.error.body) == (status, body_text(body))
    assert session.verdicts == () and session.store.verdicts() == []


@pytest.mark.parametrize("body", [DEEPSEEK_MISSING, KIMI_MISSING])
def test_a_reasoning_demand_the_pad_cannot_change_surfaces_after_one_request(
        emulator: Start, home: Path, body: object) -> None:
    # Every assistant turn already carries its reasoning: padding would resend the same request.
    emu, session = plain_session(emulator, home)
    assert carried(emu.received[0]) == []
    emu.fail_next(400, body)
    outcome = send(session, "again")
    assert statuses(emu.received) == [200, 400]
    assert carried(emu.received[1]) == [STRICT_DROP]
    assert outcome.error is not None and outcome.notices == []
    assert (outcome.error.status, outcome.error.body) == (400, body_text(body))
    assert session.verdicts == () and session.store.verdicts() == []


def test_a_reasoning_demand_after_reasoning_content_was_dropped_surfaces(
        emulator: Start, home: Path) -> None:
    # The server rejected reasoning_content as unknown; a later demand for it cannot be met.
    emu, session = learn_on_strict(emulator, home)
    store = session.store
    store.append(session.id, _bare_tool_turn("call_bare0002"))
    session = resume(store, session.id)
    learned = session.verdicts
    emu.fail_next(400, DEEPSEEK_MISSING)
    outcome = send(session, "go on")
    assert statuses(emu.received[3:]) == [400]
    assert outcome.error is not None and outcome.notices == []
    assert session.verdicts == learned and store.verdicts() == list(learned)


def test_a_pad_already_learned_is_not_learned_twice(emulator: Start, home: Path) -> None:
    emu = emulator("deepseek")
    store = store_at(home)
    session = create(store, provider_at(emu), tools=[LOOKUP])
    assert send(session, "find a").error is None
    store.append(session.id, _bare_tool_turn("call_bare0003"))
    session = resume(store, session.id)
    assert send(session, "go on").error is None
    assert statuses(emu.received) == [200, 400, 200]
    learned = session.verdicts

    emu.fail_next(400, KIMI_MISSING)
    outcome = send(session, "and?")
    assert statuses(emu.received[3:]) == [400]
    assert PAD in [m.get(RC) for m in assistants(emu.received[-1])]
    assert outcome.error is not None and outcome.notices == []
    assert session.verdicts == learned


# --- history and branches -------------------------------------------------------------------------


def test_stored_history_is_never_touched_by_the_fallback(emulator: Start, home: Path) -> None:
    emu, session = strict_session(emulator, home)
    assert send(session, "weather in Paris").error is None
    before = stored(session.store, session.id)
    thought = session.history[-1].reasoning_text()
    assert thought.strip()

    assert send(session, answer_call(session, "sunny")).error is None
    assert statuses(emu.received) == [200, 400, 200]
    after = stored(session.store, session.id)
    assert after[:len(before)] == before  # byte-identical prefix, reasoning included
    assert len(after) == len(before) + 2  # + the tool result and the answer
    assert assistants(emu.received[1])[0][RC] == thought  # what the rejected request carried
    reloaded = session.store.load_history(session.id).messages
    assert [m.message for m in reloaded] == list(session.history)
    assert reloaded[len(before) - 1].message.reasoning_text() == thought
    assert all(m.message.reasoning_text().strip() for m in reloaded
               if m.message.role == "assistant")  # the answer's reasoning is stored too


def test_branches_inherit_the_sessions_verdicts(emulator: Start, home: Path) -> None:
    emu, session = learn_on_strict(emulator, home)
    assert session.store.forget_verdicts() == 1  # only the session's copy remains

    whole = session.branch(title="whole")
    early = session.branch(at=3, title="early")  # system, user, the first tool call
    for branch in (whole, early):
        assert branch.verdicts == session.verdicts
        assert branch.record.model_config["verdicts"] == [v.to_json() for v in session.verdicts]

    before = len(emu.received)
    assert send(whole, "and Rome?").error is None
    assert send(whole, answer_call(whole)).error is None
    assert send(early, answer_call(early, "cloudy")).error is None
    resumed = resume(store_at(home), early.id)  # and after a restart
    assert send(resumed, "thanks").error is None
    assert statuses(emu.received[before:]) == [200, 200, 200, 200]
    assert all(any_carrier(r) == frozenset() for r in emu.received[before:])
    assert [len(assistants(r)) for r in emu.received[before:]] == [2, 3, 1, 2]
