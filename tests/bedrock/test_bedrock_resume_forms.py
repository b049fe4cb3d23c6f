"""Issue 17 on Converse, over a session's life: a resumed request is the request a fresh encode of
the same history builds, whatever happened around the resume, and a rejection of it teaches what
it teaches for the fresh one.

The property resumes a session in the middle of its history (often inside a tool loop: a call
stored, its result added after the resume), resumes it again, learns a lesson (rejected
fingerprints, a dropped carrier) or moves to another model, and resumes once more. At every step:

- the request bytes equal a fresh encode of the history (a plain list, a new cache);
- the request log's summary is the fresh one's;
- every rejection wording Converse answers with (a signature named by its place
  ``messages.N.content.M``, one naming no place, the carriers a model does not take) teaches
  exactly what it teaches for the fresh request: the places of a spliced request's opaque blocks
  are those of the fresh one, same-role turns merged;
- a resume with every call answered and a new question decodes nothing, and reading a rejection
  of its request decodes nothing either.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_bedrock_properties import CLAUDE, ORIGINS, TARGETS, histories

from thoughtline import ProviderConfig, Session, open_store
from thoughtline.codecs.base import Encoded, Lesson
from thoughtline.codecs.bedrock.policy import fingerprint_of
from thoughtline.codecs.bedrock.wire import REASONING, REASONING_TEXT, REDACTED, SIGNATURE
from thoughtline.messages import Message, Reasoning, Text, ToolCall, ToolResult, tool_results, user
from thoughtline.replay import ReplayPlan, answered
from thoughtline.turn import TurnEngine
from thoughtline.verdicts import Verdict
from thoughtline.wire.stored import Joined

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
QUESTION = user("and next?")
#: The Converse wordings ``rejections`` reads that name no place (sources in routes/bedrock.toml).
WORDINGS = (
    "Invalid `signature` in `thinking` block",
    "Invalid 'data' in 'redacted_thinking' block",
    "This model doesn't support the reasoningContent.reasoningText.signature field. Remove "
    "reasoningContent.reasoningText.signature and try again.",
    "This model doesn't support the reasoningContent.reasoningText.text field. Remove "
    "reasoningContent.reasoningText.text and try again.",
    "User messages cannot contain reasoning content.",
    "Encrypted content cannot be used in a different region from the one that created it.",
)


def provider(model: str) -> ProviderConfig:
    return ProviderConfig(id="bedrock", api="bedrock", base_url="", model=model,
                          auth="sigv4:bedrock", region="us-east-1")


def rejections(body: bytes) -> list[str]:
    """Every error body worth reading against ``body``: each wording naming no place, and a
    signature rejection naming each reasoning block the request carries by its place."""
    out = [orjson.dumps({"message": w}).decode() for w in WORDINGS]
    for m, message in enumerate(orjson.loads(body)["messages"]):
        for b, block in enumerate(message["content"]):
            if REASONING in block:
                out.append(orjson.dumps({"message": f"messages.{m}.content.{b}: Invalid "
                                                    "`signature` in `thinking` block"}).decode())
    return out


def built(session: Session, history: list[Message] | None,
          pending: list[Message]) -> tuple[Encoded, ReplayPlan]:
    """The session's next request, or (``history`` given) a fresh encode of ``history`` under
    the same config and lessons: a plain list and a new cache."""
    turn = session._turn(pending)
    if history is not None:
        turn = replace(turn, history=list(history), cache=None)
    return TurnEngine.build(turn, stream=True)


def settled(history: list[Message], pending: list[Message]) -> bool:
    """Is nothing to repair, so a resume with a new question needs no decoded turn?"""
    return bool(history) and isinstance(answered(history, pending), Joined)


def check(session: Session, history: list[Message], pending: list[Message], *,
          stored: bool = True) -> None:
    """The session's request is the fresh one, and reads back as it does (see the docstring).
    ``stored``: the forms stored are for the session's plan (no lesson or new model since)."""
    undecoded = (stored and bool(pending) and settled(history, pending)
                 and not session._history.decoded)
    spliced, plan = built(session, None, pending)
    decoded = session._history.decoded
    fresh, _ = built(session, history, pending)
    assert spliced.raw == fresh.raw
    codec = session.codec
    assert codec.summary(spliced) == codec.summary(fresh)
    for body in rejections(fresh.raw):
        assert codec.classify(400, body, spliced, plan) == codec.classify(400, body, fresh, plan)
    assert session._history.decoded is decoded  # read from the request as sent
    if undecoded:
        assert session._history.decoded is False


@dataclass(frozen=True, slots=True)
class Change:
    """What happens to the session between two resumes: a lesson on its route, or a new model."""

    lesson: str
    model: str = ""

    def apply(self, session: Session, history: list[Message]) -> None:
        if self.model:
            session.set_provider(provider(self.model))
            return
        route = session.route
        if self.lesson == "fingerprinted":  # every other opaque value the history holds
            found = sorted({fingerprint_of(p) for m in history for p in m.parts
                            if isinstance(p, Reasoning)} - {""})
            session._learned(Lesson(notice="learned", fingerprints=frozenset(found[::2])))
        elif self.lesson != "none":
            session._learned(Lesson(notice="learned", verdict=Verdict(
                provider=route.provider, host=route.host, model=route.model,
                drop=frozenset({self.lesson}), reason="a test's lesson")))


CHANGES = st.one_of(
    st.sampled_from(["none", "fingerprinted", REASONING, REASONING_TEXT, SIGNATURE, REDACTED]
                    ).map(Change),
    st.sampled_from(TARGETS).map(lambda model: Change("model", model)),
)


@SETTINGS
@given(whole=histories(), cut=st.integers(0, 32), target=st.sampled_from(TARGETS),
       question=st.booleans(), change=CHANGES)
def test_a_resumed_request_is_a_fresh_one_and_reads_back_like_one(
        tmp_path_factory: Any, whole: list[Message], cut: int, target: str, question: bool,
        change: Change) -> None:
    first, then = whole[:cut % (len(whole) + 1)], whole[cut % (len(whole) + 1):]
    pending = [QUESTION] if question else []  # none: the stored tool loop goes on
    home = tmp_path_factory.mktemp("bedrock-resume")
    with open_store(home / "state.db", home) as store:
        session = Session.create(store, provider(target))
        session.append(first)
        resumed = Session.resume(store, session.id)
        check(resumed, first, pending)
        # Turns added after the resume (results of calls stored before it): their forms are
        # written for the loop they are in, and the next requests splice on.
        resumed.append(then)
        check(resumed, whole, pending)
        again = Session.resume(store, session.id)
        check(again, whole, pending)
        # A lesson or another model: encoded anew, correctly, and every form stored again.
        change.apply(again, whole)
        check(again, whole, pending, stored=False)
        moved = Session.resume(store, session.id)  # the forms stored are the old plan's
        check(moved, whole, pending, stored=False)
        again.append([user("more")])
        last = Session.resume(store, session.id)
        check(last, [*whole, user("more")], pending)


def _claude(n: int, *, call: bool = False) -> Message:
    origin = ORIGINS[0]
    parts: list[Any] = [Reasoning(kind="signed", text=f"thought {n}", signature=f"Esig{n}",
                                  origin=origin),
                        Text(text=f"answer {n}")]
    if call:
        parts.append(ToolCall(id=f"call{n}", name="f", arguments='{"a":1}'))
    return Message(role="assistant", origin=origin, parts=tuple(parts))


def test_a_rejection_naming_a_merged_turns_block_fingerprints_that_block_only(
        tmp_path: Path) -> None:
    """Two Claude turns in a row are one Converse message; a resumed request's rejection naming
    the second turn's signed block (block 2 of that message) fingerprints its signature alone,
    read from the request as sent, decoding nothing."""
    history = [user("q"), _claude(0), _claude(1, call=True),
               tool_results([ToolResult(call_id="call1", content="ok")]), _claude(2)]
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, provider(CLAUDE))
        session.append(history)
        resumed = Session.resume(store, session.id)
        spliced, plan = built(resumed, None, [QUESTION])
        body = orjson.dumps({"message": "messages.1.content.2: Invalid `signature` in `thinking` "
                                        "block"}).decode()
        lesson = resumed.codec.classify(400, body, spliced, plan)
        assert resumed._history.decoded is False
    assert lesson is not None and lesson.verdict is None
    assert lesson.fingerprints == {fingerprint_of(history[2].parts[0])}  # type: ignore[arg-type]
    sent = orjson.loads(spliced.raw)["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    assert sent[1]["content"][2][REASONING]["reasoningText"]["signature"] == "Esig1"


