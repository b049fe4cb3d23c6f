"""Issue 17 on the Responses API: a resumed session's input items are spliced from their stored
wire forms (``thoughtline.wire.cache``), nothing decoded, byte-identical to what the ordinary load
builds — and a rejection of a spliced request is still repaired with one retry that drops only
the offending item (the rejected body is read back from its bytes)."""

from __future__ import annotations

from pathlib import Path

import orjson
from responses_support import (
    LOOKUP,
    answer_calls,
    done_of,
    in_place,
    notices,
    provider_at,
    reasoning_in,
    reject_next_item,
    store_at,
    turn,
)

from thoughtline.messages import user
from thoughtline.session import Session
from thoughtline.testing.responses_emulator import ResponsesEmulator

PENDING = user("and tomorrow?")


def _two_loops(emu: ResponsesEmulator, home: Path) -> str:
    session = Session.create(store_at(home), provider_at(emu), tools=[LOOKUP])
    first = done_of(turn(session, "what is the weather in Oslo?"))
    done_of(turn(session, answer_calls(first)))
    second = done_of(turn(session, "and in Bergen?"))
    done_of(turn(session, answer_calls(second, "snow")))
    return session.id


def test_a_resume_splices_the_stored_items_byte_identical(emu: ResponsesEmulator,
                                                          home: Path) -> None:
    session_id = _two_loops(emu, home)
    spliced = Session.resume(store_at(home), session_id)
    body = spliced.request_bytes([PENDING], stream=True)
    assert spliced._history.decoded is False  # read from the stored forms, nothing decoded
    ordinary = Session.resume(store_at(home), session_id)
    assert len(ordinary.history) == spliced.turns  # decodes (and verifies) the canonical rows
    assert ordinary.request_bytes([PENDING], stream=True) == body
    assert all(orjson.dumps(item) in body for item in emu.issued_items)


def test_a_rejected_item_of_a_spliced_request_is_repaired_once(emu: ResponsesEmulator,
                                                               home: Path) -> None:
    session_id = _two_loops(emu, home)
    resumed = Session.resume(store_at(home), session_id)
    victim = emu.issued_items[1]
    reject_next_item(emu, victim)
    before = len(emu.received)
    events = turn(resumed, "thanks, and tomorrow?")
    assert done_of(events).message.text and notices(events)
    rejected, retry = emu.received[before:]
    assert (rejected.status, retry.status) == (400, 200)
    kept = [i for i in emu.issued_items[:4] if i is not victim]
    assert [orjson.dumps(i) for i in reasoning_in(retry)] == [orjson.dumps(i) for i in kept]
    assert len(reasoning_in(rejected)) == 4 and in_place(retry)
