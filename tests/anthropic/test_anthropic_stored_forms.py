"""Issue 17 on the Anthropic API: a resumed session's request is spliced from each turn's stored
wire form, byte-identical to what the ordinary load (decode, then encode) builds.

An Anthropic turn's encoding depends on where it is (its context,
``codecs/anthropic/turns.py``): whether it keeps its thinking (the model's rule for earlier
turns, the current tool loop, the last turn), and on a model that binds blocks the chain state
and the prefix digest its stamp is checked against. So the properties draw histories with every
native part (signed, empty-signed, redacted, unsigned and cut thinking, citations, server-tool
blocks, incomplete turns, stamps right and wrong, system prompts early and late), models with
each rule, tools, the mismatch setting, learned fingerprints and model changes, appended in
chunks as turns are answered:

- spliced == ordinary bytes, on resume, on the next request of the same process, and after a
  turn appended by a resumed session (its forms written from the stored ones, not decoded);
- nothing was decoded when nothing forces it;
- a corrupt form is reported and never sent; a form whose context differs (a branch that ends
  where an earlier turn was the last, a rebuilt system prompt) falls back, byte-identical.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers_forms import FORM_FAILED, forge_stored_form
from thoughtline import Session, ToolSpec, config, open_store
from thoughtline.codecs.anthropic import binding, models, part_fingerprint
from thoughtline.codecs.base import Lesson
from thoughtline.events import Done
from thoughtline.messages import (
    Message,
    Opaque,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    system,
    tool_results,
    user,
)
from thoughtline.replay import answered
from thoughtline.turn import TurnEngine
from thoughtline.wire.stored import Joined

TOOLS = (ToolSpec(name="f", description="a tool", parameters={"type": "object"}),)
PENDING = user("and the next step?")
PRESETS = config.presets()
PROVIDERS = {
    "opus": replace(PRESETS["anthropic"], model="claude-opus-4-5"),  # keeps every turn's
    "sonnet": replace(PRESETS["anthropic"], model="claude-sonnet-4-5"),  # only the loop's, last
    "fable": replace(PRESETS["anthropic"], model="claude-fable-5-1"),  # binds blocks
    "vertex": replace(PRESETS["vertex-anthropic"], model="claude-sonnet-4-5",
                      project="p", region="us-east5"),
    "bedrock": replace(PRESETS["bedrock-anthropic"], region="us-east-1"),
    "deepseek": PRESETS["deepseek-anthropic"],  # unsigned thinking only
}
ORIGINS = {name: Origin(api="anthropic", provider=p.id, host=p.base_url.split("//")[-1],
                        model=p.model, account=p.project, region=p.region)
           for name, p in PROVIDERS.items()}
PARTS = st.sampled_from(["signed", "empty", "redacted", "unsigned", "cut", "text", "cited",
                         "server"])
ASSISTANT = st.tuples(st.just("assistant"), st.lists(PARTS, min_size=1, max_size=4),
                      st.integers(0, 2),  # tool calls
                      st.sampled_from(["right"] * 4 + ["wrong", "none"]),  # its stamp
                      st.sampled_from(["self"] * 6 + sorted(PROVIDERS)),  # who made it
                      st.sampled_from([False] * 9 + [True]))  # cut short
ROUNDS = st.lists(st.one_of(ASSISTANT, ASSISTANT, ASSISTANT, st.tuples(st.just("user")),
                            st.tuples(st.just("system"))), min_size=1, max_size=9)


def _prefix(session: Session, history: list[Message]) -> str:
    """The prefix digest a request of ``session`` with ``history`` has (what its answer is
    stamped with)."""
    encoded, _ = TurnEngine.build(replace(session._turn([]), history=history), stream=True)
    return encoded.index.prefix


def _part(kind: str, n: int, who: Origin) -> Any:
    match kind:
        case "signed" | "empty":
            return Reasoning(kind="signed", text="" if kind == "empty" else f"thought {n}",
                             signature=f"sig-{n}", origin=who)
        case "redacted":
            return Reasoning(kind="redacted", data=f"data-{n}==", origin=who)
        case "unsigned":
            return Reasoning(kind="text", text=f"plain {n}", origin=who)
        case "cut":
            return Reasoning(kind="signed", text=f"cut {n}", complete=False, origin=who)
        case "cited":
            return Text(text=f"cited {n}", native={"anthropic": {"citations": [
                {"type": "web_search_result_location", "url": f"https://e.x/{n}"}]}})
        case "server":
            return Opaque(native={"anthropic": {"type": "server_tool_use", "id": f"srv_{n}",
                                                "name": "web_search", "input": {"q": n}}},
                          origin=who)
    return Text(text=f"answer {n}")


def _history(session: Session, rounds: list[Any], start: int = 0) -> list[Message]:
    """Messages for ``rounds`` after the session's history, each assistant turn stamped as the
    session would stamp it (or wrongly, or not at all); every tool call answered."""
    before = list(session.history)
    out: list[Message] = []
    for n, spec in enumerate(rounds, start * 100):
        if spec[0] == "user":
            out.append(user(f"question {n}"))
        elif spec[0] == "system":
            out.append(system(f"be brief ({n})"))
        else:
            _, kinds, calls, stamp, maker, incomplete = spec
            who = ORIGINS[maker] if maker != "self" else next(
                ORIGINS[name] for name, p in PROVIDERS.items() if p == session.provider)
            parts = [_part(kind, n * 10 + i, who) for i, kind in enumerate(kinds)]
            parts += [ToolCall(id=f"call_{n}_{i}", name="f", arguments=f'{{"n": {i}}}')
                      for i in range(calls)]
            native: dict[str, Any] = {}
            prefix = _prefix(session, [*before, *out]) if stamp == "right" else f"{n:064x}"
            if stamp != "none" and prefix:
                native = {"anthropic": {binding.PREFIX_KEY: prefix}}
            out.append(Message(role="assistant", parts=tuple(parts), origin=who,
                               incomplete=incomplete, native=native))
            if calls and not incomplete:
                out.append(tool_results(ToolResult(call_id=f"call_{n}_{i}", content=f"r{i}")
                                        for i in range(calls)))
    return out


def _request(session: Session, pending: list[Message]) -> tuple[bytes, dict[str, Any], str]:
    """The bytes of the session's next request, what the log records of it, and the prefix
    digest its answer is stamped with (not in the bytes: it must come out right too)."""
    encoded, _ = TurnEngine.build(session._turn(pending), stream=True)
    return encoded.raw, session.codec.summary(encoded), encoded.index.prefix


def _ordinary_request(store: Any, session_id: str,
                      pending: list[Message]) -> tuple[bytes, dict[str, Any], str]:
    """What the ordinary load builds: the history decoded, then encoded."""
    ordinary = Session.resume(store, session_id)
    assert len(ordinary.history) == ordinary.turns  # decodes (and verifies) every turn
    return _request(ordinary, pending)


def _ordinary(store: Any, session_id: str, pending: list[Message]) -> bytes:
    return _ordinary_request(store, session_id, pending)[0]


def _forced(store: Any, session_id: str, pending: list[Message]) -> bool:
    """May this request decode? With an unanswered call (answering it builds a new view of
    the decoded turns), or when a form may not fit: on a model that binds blocks after a
    rejection, a stale turn may change the chain every later form was stored under."""
    session = Session.resume(store, session_id)
    if not isinstance(answered(session.history, pending), Joined):
        return True
    plan = TurnEngine.plan(session._turn([]))
    if not (models.binds_blocks(session.provider.model) and plan.fingerprints):
        return False
    encoded, _ = TurnEngine.build(session._turn(pending), stream=True)
    return encoded.index.stale > 0


@settings(max_examples=200, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rounds=ROUNDS, more=ROUNDS, first=st.sampled_from(sorted(PROVIDERS)),
       second=st.sampled_from(sorted(PROVIDERS)), chunk=st.integers(1, 4),
       tools=st.booleans(), drop=st.booleans(), prompt=st.booleans(), learn=st.booleans(),
       pending=st.sampled_from(["user", "none", "system"]))
def test_a_spliced_resume_is_byte_identical_to_the_ordinary_load(
        tmp_path_factory: Any, rounds: list[Any], more: list[Any], first: str, second: str,
        chunk: int, tools: bool, drop: bool, prompt: bool, learn: bool, pending: str) -> None:
    home = tmp_path_factory.mktemp("forms")
    wanted = {"user": [PENDING], "none": [], "system": [system("now in French"), PENDING]}[
        pending]
    with open_store(home / "state.db", home) as store:
        session = Session.create(store, PROVIDERS[first], tools=TOOLS if tools else (),
                                 system="You are terse." if prompt else None,
                                 params={"prefix_mismatch_behavior": "drop_block"} if drop
                                 else None)
        history = _history(session, rounds)
        for at in range(0, len(history), chunk):  # appended as turns are answered
            session.append(history[at:at + chunk])
        if learn:  # a rejection taught fingerprints: a new plan, every form stored anew
            prints = {part_fingerprint(p) for m in history for p in m.reasoning[:1]}
            session._learned(Lesson(notice="learned", fingerprints=frozenset(prints)))
            session.append([user("after the lesson")])
        resumed = Session.resume(store, session.id)
        forced = _forced(store, session.id, wanted)
        assert _request(resumed, wanted) == _ordinary_request(store, session.id, wanted)
        assert forced or resumed._history.decoded is False
        assert _request(resumed, [PENDING]) == _ordinary_request(store, session.id, [PENDING])
        # The next request of the same process, after an answered turn.
        resumed.append(_history(session, more, start=1))  # (the same turns, as a list)
        assert _request(resumed, wanted) == _ordinary_request(store, session.id, wanted)
        # The forms the resumed session wrote (from the stored ones) splice on the next resume.
        again = Session.resume(store, session.id)
        forced = _forced(store, session.id, wanted)
        assert _request(again, wanted) == _ordinary_request(store, session.id, wanted)
        assert forced or again._history.decoded is False
        # A model change re-encodes once (correctly) and stores the new forms.
        again.set_provider(PROVIDERS[second])
        assert _request(again, wanted) == _ordinary_request(store, session.id, wanted)
        again.append([user("more"), Message(role="assistant", parts=(Text(text="ok"),))])
        last = Session.resume(store, session.id)
        forced = _forced(store, session.id, wanted)
        assert _request(last, wanted) == _ordinary_request(store, session.id, wanted)
        assert forced or last._history.decoded is False


def _conversation(model: str = "claude-sonnet-4-5") -> list[Message]:
    who = replace(ORIGINS["sonnet"], model=model)
    out: list[Message] = []
    for n in range(4):
        out += [user(f"q{n}"), Message(role="assistant", origin=who, parts=(
            Reasoning(kind="signed", text=f"t{n}", signature=f"sig-{n}", origin=who),
            Text(text=f"a{n}")))]
    return out


def test_a_corrupt_wire_form_is_reported_and_never_sent(tmp_path: Path) -> None:
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS["opus"])
        session.append(_conversation("claude-opus-4-5"))
    forge_stored_form(tmp_path / "state.db", b"sig-2", b"FORGED")
    with open_store(tmp_path / "state.db", tmp_path) as store:
        resumed = Session.resume(store, session.id)
        assert [p.detail for p in resumed.problems] == [FORM_FAILED]
        body = resumed.request_bytes([PENDING], stream=True)
        assert b"FORGED" not in body and b'"signature":"sig-2"' in body
        assert body == _ordinary(store, session.id, [PENDING])


def test_a_branch_ending_where_a_turn_was_last_falls_back_byte_identical(
        tmp_path: Path) -> None:
    # Sonnet 4.5 keeps only the last assistant turn's thinking: the session's turns were
    # stored at once, so only the last has a form with its thinking (the others were never
    # last). A branch ending after turn 3 makes it the last, so no stored form of it fits
    # there: the branch decodes, and sends it signed.
    history = _conversation()
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS["sonnet"])
        session.append(history)
        branch = session.branch(at=4)
        resumed = Session.resume(store, branch.id)
        body = resumed.request_bytes([PENDING], stream=True)
        assert resumed._history.decoded is True
        assert body == _ordinary(store, branch.id, [PENDING])
        assert b'"signature":"sig-1"' in body and b'"signature":"sig-0"' not in body
        # The original still splices: its earlier turns without thinking, the last with it.
        original = Session.resume(store, session.id)
        body = original.request_bytes([PENDING], stream=True)
        assert original._history.decoded is False
        assert body == _ordinary(store, session.id, [PENDING])
        assert body.count(b'"signature"') == 1 and b'"signature":"sig-3"' in body


@pytest.mark.parametrize("drop", [False, True], ids=["error", "drop_block"])
def test_a_rebuilt_system_prompt_leaves_stale_blocks_out_of_the_splice(
        tmp_path: Path, drop: bool) -> None:
    # Fable 5.1 binds blocks to their prefix: every turn was stamped under the first prompt.
    # Under a new prompt each is stale, and its stored form (kept, signed) goes out without
    # its thinking — unless the session lets the API drop them.
    params = {"prefix_mismatch_behavior": "drop_block"} if drop else None
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS["fable"], system="Today is Monday.",
                                 params=params)
        session.append(_history(session, [("user",), ("assistant", ["signed", "text"], 1,
                                                       "right", "fable", False)] * 2))
        resumed = Session.resume(store, session.id)
        same = resumed.request_bytes([PENDING], stream=True)
        assert resumed._history.decoded is False and same.count(b'"signature"') == 2
        wanted = [system("Today is Tuesday."), PENDING]
        body = resumed.request_bytes(wanted, stream=True)
        assert resumed._history.decoded is False
        assert body == _ordinary(store, session.id, wanted)
        assert body.count(b'"signature"') == (2 if drop else 0)
        summary = resumed.codec.summary(TurnEngine.build(resumed._turn(wanted),
                                                         stream=True)[0])
        assert summary.get("stale_turns", 0) == (0 if drop else 2)


def test_the_log_and_the_hooks_read_a_spliced_request_as_the_ordinary_one(
        tmp_path: Path) -> None:
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS["sonnet"])
        session.append(_conversation())
        encoded, plan = TurnEngine.build(session._turn([PENDING]), stream=True)
        resumed = Session.resume(store, session.id)
        spliced, _ = TurnEngine.build(resumed._turn([PENDING]), stream=True)
        assert spliced.raw == encoded.raw
        codec = resumed.codec
        # The log's counts come from the stored turns' after facts, not from the body or the
        # turns.
        assert codec.summary(spliced) == codec.summary(encoded) == {
            "api": "anthropic", "blocks": {"text": 9, "thinking": 1}, "thinking_omitted": 3}
        assert resumed._history.decoded is False
        # A rejection, or a report of a dropped block, is read from the stored turns' after
        # facts (nothing rebuilt, nothing decoded): the same lesson as the ordinary request's.
        rejection = orjson.dumps({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "messages.7.content.0: Invalid `signature` in `thinking` block"}}).decode()
        lesson = codec.classify(400, rejection, spliced, plan)
        assert lesson is not None and lesson == codec.classify(400, rejection, encoded, plan)
        assert lesson.fingerprints == {part_fingerprint(session.history[7].parts[0])}
        assert resumed._history.decoded is False
        done = Done(message=Message(role="assistant", parts=(Text(text="ok"),)), usage=Usage(),
                    finish_reason="end_turn", reports=({"type": "thinking_dropped",
                                                        "path": "messages.7.content.0"},))
        assert codec.reported(done, spliced, plan) == codec.reported(done, encoded, plan)
        assert codec.reported(done, spliced, plan) is not None


def test_a_chain_cut_that_moved_falls_back_byte_identical(tmp_path: Path) -> None:
    # Fable 5.1 after a rejection: a rejected block cuts the chain once a block has gone out
    # before it (preserved-thinking page). The forms were stored while the API could drop blocks
    # itself (nothing stale): turn 1 kept, so turn 3's rejected block cut the chain. Now it may not:
    # stamped under another prefix turn 1 is stale, so no block has gone out when turn 3's rejected
    # block comes, and its next block does go: no stored form of turn 3 has that chain before
    # it, and the request is encoded from the turns.
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS["fable"])
        session.append(_history(session, [("user",), ("assistant", ["signed"], 0, "wrong",
                                                       "fable", False),
                                           ("user",), ("assistant", ["signed", "signed"], 0,
                                                       "right", "fable", False)]))
        rejected = session.history[3].parts[0]
        session._learned(Lesson(notice="learned",
                                fingerprints=frozenset({part_fingerprint(rejected)}),
                                settings={"anthropic": {"prefix_mismatch_behavior": "drop_block"}}))
        session.append([user("after the lesson")])
        session.remember({"anthropic": {"prefix_mismatch_behavior": "error"}})
        resumed = Session.resume(store, session.id)
        body = resumed.request_bytes([PENDING], stream=True)
        assert resumed._history.decoded is True
        assert body == _ordinary(store, session.id, [PENDING])
        signatures = [b["signature"] for m in orjson.loads(body)["messages"]
                      for b in m["content"] if b["type"] == "thinking"]
        assert signatures == [session.history[3].parts[1].signature]


