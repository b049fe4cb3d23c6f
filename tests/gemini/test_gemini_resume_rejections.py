"""A rejection of a resumed Gemini request teaches what it teaches for a fresh encode of the same
history, over a session's life: resumed mid-history (a call stored, its result added after the
resume), with turns added since, under every lesson a session may have learned, and after one
more lesson or a move to another route.

What a Gemini rejection teaches depends on what the request carried: the real signatures (which
get fingerprinted), the dummy (which the route then refuses), whether every call was already
signed. A resumed request carries stored turns' bytes and turns encoded since; what it carried
must be known exactly — from the request as sent, decoding nothing — and the request log's counts
must be those of the fresh request.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gemini_histories import CHANGE, HISTORIES, PROVIDERS, SETUP, Setup
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gemini_stored_forms import PENDING, REJECTIONS

from thoughtline import Session, open_store
from thoughtline.messages import Message, user
from thoughtline.turn import TurnEngine

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


def check(session: Session, history: list[Message]) -> None:
    spliced, plan = TurnEngine.build(session._turn([PENDING]), stream=True)
    decoded = session._history.decoded
    fresh, _ = TurnEngine.build(replace(session._turn([PENDING]), history=list(history),
                                        cache=None), stream=True)
    assert spliced.raw == fresh.raw
    codec = session.codec
    assert codec.summary(spliced) == codec.summary(fresh)
    for body in REJECTIONS.values():
        for status in (400, 404):
            assert codec.classify(status, body, spliced, plan) == codec.classify(
                status, body, fresh, plan)
    # Read from the request as sent: reading a rejection decodes nothing.
    assert session._history.decoded is decoded


@SETTINGS
@given(whole=HISTORIES, cut=st.integers(0, 64), setup=SETUP, other=CHANGE)
def test_a_rejection_of_a_resumed_request_teaches_what_it_teaches_fresh(
        tmp_path_factory: Any, whole: list[Message], cut: int, setup: Setup,
        other: Setup) -> None:
    first, then = whole[:cut % (len(whole) + 1)], whole[cut % (len(whole) + 1):]
    home = tmp_path_factory.mktemp("gemini-rejections")
    with open_store(home / "state.db", home) as store:
        session = Session.create(store, PROVIDERS[setup.provider or "pro"])
        setup.apply(session)
        session.append(first)
        resumed = Session.resume(store, session.id)
        check(resumed, first)
        resumed.append(then)
        check(resumed, whole)
        again = Session.resume(store, session.id)
        check(again, whole)
        other.apply(again)
        check(again, whole)
        again.append([user("more")])
        last = Session.resume(store, session.id)
        check(last, [*whole, user("more")])
