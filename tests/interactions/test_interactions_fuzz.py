"""Untrusted Interactions replies never crash (issue 29 with issue 22's contract).

There is no recorded Interactions traffic in tests/fixtures, so the corpus is the emulator's own
answers (text and tool-call interactions, whole and streamed: ``testing.interactions_replies``),
mutated exactly like the recorded corpus of the other APIs (``tests/robustness``): one value
replaced by one of another type, a key deleted, an item duplicated or wrapped; for streams also an
event dropped, repeated, renamed, or the stream cut. Each reply runs through the real turn
engine; the only error allowed out is a ``ProtocolError`` naming the route, and an accepted answer
must be stored, storable and renderable (``reply_support.check_outcome``).
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "robustness"))

import reply_support
from hypothesis import event, given
from hypothesis import strategies as st
from reply_support import check_outcome, run_reply
from test_fuzz_replies import FUZZ, ODD, OPS, STREAM_OPS, mutate

from thoughtline.testing import interactions_replies as replies
from thoughtline.testing.signing import Signer

API = "gemini-interactions"
_SIGNER = Signer()


def _answers() -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    out = []
    for n, body in enumerate(({"model": "m", "input": "hello"},
                              {"model": "m", "input": "go", "tools": [{"name": "lookup"}]}),
                             start=1):
        steps, status = replies.output_steps(body, [], n, _SIGNER)
        ident = f"v1_fuzz{n}"
        out.append((replies.whole(ident, "m", steps, status, body, 400),
                    replies.events(ident, steps, status, 400)))
    return out


ANSWERS = _answers()


@pytest.fixture(autouse=True)
def _route(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(reply_support.PROVIDERS, API, ("gemini-interactions",
                                                      "gemini-3-pro-preview"))


def test_the_unmutated_answers_are_accepted_whole_and_streamed() -> None:
    for whole, events in ANSWERS:
        for outcome in (run_reply(API, whole, stream=False),
                        run_reply(API, [("", e) for e in events], stream=True)):
            assert outcome.error is None and outcome.done is not None
            assert outcome.done.message.reasoning[0].signature == whole["steps"][0]["signature"]
            check_outcome(outcome)


@FUZZ
@given(which=st.integers(0, 1), pick=st.integers(0, 10_000), op=st.sampled_from(OPS), new=ODD)
def test_the_decoder_survives_mutated_answers(which: int, pick: int, op: str, new: Any) -> None:
    outcome = run_reply(API, mutate(ANSWERS[which][0], pick, op, new), stream=False)
    event("protocol error" if outcome.error else "accepted")
    check_outcome(outcome)


@FUZZ
@given(which=st.integers(0, 1), at=st.integers(0, 10_000), stream_op=st.sampled_from(STREAM_OPS),
       pick=st.integers(0, 10_000), op=st.sampled_from(OPS), new=ODD)
def test_the_fold_survives_mutated_streams(which: int, at: int, stream_op: str, pick: int,
                                           op: str, new: Any) -> None:
    events: list[tuple[str, Any]] = [("", e) for e in ANSWERS[which][1]]
    i = at % len(events)
    kind, payload = events[i]
    if stream_op == "payload":
        events[i] = (kind, mutate(payload, pick, op, new))
    elif stream_op == "drop":
        del events[i]
    elif stream_op == "repeat":
        events.insert(i, (kind, copy.deepcopy(payload)))
    elif stream_op == "retype":
        events[i] = (str(new)[:20], payload)
    else:
        del events[i:]
    outcome = run_reply(API, events, stream=True)
    event("protocol error" if outcome.error else "accepted")
    check_outcome(outcome)
