"""A resumed Anthropic session's request reads exactly as the ordinary load's (decode, then
encode) wherever its turns sit: a native compaction block in its checkpoint, a turn-scoped
``system`` message kept inside ``messages`` (preserved-thinking prefix-checks page;
docs/claude-code.md), among thinking kept and dropped by the loop rule, stamps right and wrong on a
model that binds blocks, learned fingerprints and ``drop_block``.

"Reads as" is what the core and the API see of a request: its bytes, the request log's line, the
prefix digest its answer is stamped with, and the lesson of a rejection or a report naming any
of its thinking blocks. Only the public session surface and the codec's hooks are used, so these
hold whatever the resume path is built from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_anthropic_stored_forms import ASSISTANT, ORIGINS, PROVIDERS, TOOLS, _history

from thoughtline import Session, open_store
from thoughtline.codecs.anthropic import binding, part_fingerprint
from thoughtline.codecs.base import Encoded, Lesson
from thoughtline.compaction import checkpoint
from thoughtline.events import Done
from thoughtline.messages import Message, Opaque, Text, Usage, system, user
from thoughtline.turn import TurnEngine

PENDING = user("and the next step?")
#: A turn-scoped system message as the Anthropic client face keeps it (``codecs/anthropic/
#: client.py``): inside ``messages``, never moved into ``system``.
IN_PLACE = {"anthropic": {"in_place": True}}
ROUNDS = st.lists(st.one_of(
    ASSISTANT, ASSISTANT, ASSISTANT, st.tuples(st.just("user")), st.tuples(st.just("system")),
    st.tuples(st.just("in-place")), st.tuples(st.just("checkpoint"),
                                              st.sampled_from(["self", "self", "vertex"]))),
    min_size=1, max_size=8)


def _compaction(n: int, who: Any) -> Message:
    block = Opaque(native={"anthropic": {"type": "compaction", "content": f"summary {n}",
                                         "signature": f"csig-{n}"}}, origin=who)
    return checkpoint(f"summary {n}", block)


def _own(session: Session) -> Any:
    return next(ORIGINS[name] for name, p in PROVIDERS.items() if p == session.provider)


def _append_rounds(session: Session, rounds: list[Any], start: int) -> None:
    """Each round as a session stores the turns it answers (one append per round)."""
    for n, spec in enumerate(rounds, start):
        if spec[0] == "in-place":
            session.append([Message(role="system", parts=(Text(text=f"for now: terse {n}"),),
                                    native=IN_PLACE)])
        elif spec[0] == "checkpoint":
            who = _own(session) if spec[1] == "self" else ORIGINS[spec[1]]
            session.append([_compaction(n, who)])
        else:
            session.append(_history(session, [spec], start=n))


def _seen(session: Session, pending: list[Message]) -> tuple[Encoded, Any]:
    return TurnEngine.build(session._turn(pending), stream=True)


def _stamp(session: Session, encoded: Encoded) -> str | None:
    done = Done(message=Message(role="assistant", parts=(Text(text="ok"),)), usage=Usage(),
                finish_reason="end_turn")
    return binding.stamp_of(session.codec.stamp(done, encoded).message)


def _thinking_paths(raw: bytes) -> list[str]:
    return [f"messages.{n}.content.{m}" for n, message in enumerate(orjson.loads(raw)["messages"])
            if isinstance(message["content"], list)
            for m, block in enumerate(message["content"])
            if block.get("type") in ("thinking", "redacted_thinking")]


def _readings(session: Session, pending: list[Message]) -> tuple[Any, ...]:
    """Everything the core reads of the session's next request: its bytes, the log line, the
    answer's stamp, and the lesson of a rejection and of a report naming each thinking block."""
    encoded, plan = _seen(session, pending)
    codec = session.codec
    lessons: list[tuple[Lesson | None, Lesson | None]] = []
    for path in _thinking_paths(encoded.raw):
        rejection = orjson.dumps({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": f"{path}: Invalid `signature` in `thinking` block"}}).decode()
        done = Done(message=Message(role="assistant", parts=(Text(text="ok"),)), usage=Usage(),
                    finish_reason="end_turn",
                    reports=({"type": "thinking_dropped", "path": path},))
        lessons.append((codec.classify(400, rejection, encoded, plan),
                        codec.reported(done, encoded, plan)))
    return encoded.raw, codec.summary(encoded), _stamp(session, encoded), lessons


def _ordinary(store: Any, session_id: str, pending: list[Message]) -> tuple[Any, ...]:
    ordinary = Session.resume(store, session_id)
    assert len(list(ordinary.view)) == ordinary.turns  # decodes (and verifies) every turn
    return _readings(ordinary, pending)


@settings(max_examples=60, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rounds=ROUNDS, more=ROUNDS, model=st.sampled_from(["opus", "sonnet", "fable"]),
       tools=st.booleans(), drop=st.booleans(), prompt=st.booleans(), learn=st.booleans(),
       pending=st.sampled_from(["user", "system", "in-place"]))
def test_a_resumed_request_reads_as_the_ordinary_one_wherever_its_turns_sit(
        tmp_path_factory: Any, rounds: list[Any], more: list[Any], model: str, tools: bool,
        drop: bool, prompt: bool, learn: bool, pending: str) -> None:
    home = tmp_path_factory.mktemp("positions")
    wanted = {"user": [PENDING], "system": [system("now in French"), PENDING],
              "in-place": [Message(role="system", parts=(Text(text="just this once"),),
                                   native=IN_PLACE), PENDING]}[pending]
    with open_store(home / "state.db", home) as store:
        session = Session.create(store, PROVIDERS[model], tools=TOOLS if tools else (),
                                 system="You are terse." if prompt else None,
                                 params={"prefix_mismatch_behavior": "drop_block"} if drop
                                 else None)
        _append_rounds(session, rounds, 1)
        if learn:  # a rejection taught fingerprints: a new plan
            prints = {part_fingerprint(p) for m in session.history for p in m.reasoning[:1]}
            session._learned(Lesson(notice="learned", fingerprints=frozenset(prints)))
            session.append([user("after the lesson")])
        resumed = Session.resume(store, session.id)
        assert _readings(resumed, wanted) == _ordinary(store, session.id, wanted)
        # Turns a resumed session answers, and the resume after them.
        _append_rounds(resumed, more, 100)
        assert _readings(resumed, wanted) == _ordinary(store, session.id, wanted)
        again = Session.resume(store, session.id)
        assert _readings(again, wanted) == _ordinary(store, session.id, wanted)


@pytest.mark.parametrize("model", ["opus", "sonnet", "fable"])
def test_an_own_compaction_block_goes_back_in_its_place_after_a_resume(
        tmp_path: Path, model: str) -> None:
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS[model], tools=TOOLS)
        _append_rounds(session, [("checkpoint", "self"), ("checkpoint", "vertex"),
                                 ("assistant", ["signed", "text"], 1, "right", "self", False),
                                 ("user",)], 1)
        resumed = Session.resume(store, session.id)
        body = resumed.request_bytes([PENDING], stream=True)
        assert body == _ordinary(store, session.id, [PENDING])[0]
    first, second = orjson.loads(body)["messages"][:2]
    # Its own block, alone, verbatim, in the assistant turn the API returned it in
    # (compaction-on-demand page) …
    assert first == {"role": "assistant", "content": [
        {"type": "compaction", "content": "summary 1", "signature": "csig-1"}]}
    # … another provider's checkpoint goes as its summary text.
    assert second["role"] == "user" and b"csig-2" not in body
    assert second["content"][0]["text"].endswith("summary 2")


@pytest.mark.parametrize("model", ["opus", "sonnet", "fable"])
def test_a_turn_scoped_system_message_stays_in_place_after_a_resume(
        tmp_path: Path, model: str) -> None:
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDERS[model], system="Be brief.")
        _append_rounds(session, [("user",), ("assistant", ["signed", "text"], 0, "right",
                                             "self", False), ("in-place",), ("user",)], 1)
        resumed = Session.resume(store, session.id)
        seen = _readings(resumed, [PENDING])
        assert seen == _ordinary(store, session.id, [PENDING])
    body = orjson.loads(seen[0])
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "system", "user",
                                                     "user"]
    assert body["messages"][2]["content"] == [{"type": "text", "text": "for now: terse 3"}]
    assert seen[1]["blocks"]["text"] == 5  # the log counts the in-place message's block too

