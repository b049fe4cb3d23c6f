"""Issue 17 end to end on Gemini: a session resumed in a new store handle splices its stored
wire forms (nothing decoded), the emulator accepts the request and verifies every signature on
the part it was issued for, and a rejection of a spliced request is repaired with one retry.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from test_gemini_e2e import TOOLS, converse, issued_parts, signed_parts

from thoughtline import Session, ToolResult, TurnOptions, config, open_store
from thoughtline.events import Done, Notice
from thoughtline.messages import fingerprint, user
from thoughtline.requestlog import RequestLog
from thoughtline.testing.gemini_emulator import GeminiEmulator

SIG = "thoughtSignature"
DUMMY = "skip_thought_signature_validator"
MODEL = "gemini-3-pro-preview"
NEXT = "and the weather in Lima?"


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "fake-gemini-key-forms")


def _two_loops(emu: GeminiEmulator, home: Path) -> str:
    provider = config.provider("gemini", base_url=emu.base_url, model=MODEL)
    store = open_store(None, home)
    session = Session.create(store, provider, tools=TOOLS, title="forms")

    async def run() -> None:
        await converse(session, ["weather in Rome?", "weather and time in Oslo, both please"],
                       stream=True)
        await session.aclose()

    asyncio.run(run())
    store.close()
    return session.id


async def _send(session: Session, text: str) -> tuple[Done, list[str]]:
    """One user turn and the tool loop it starts: the last answer and every notice."""
    notices: list[str] = []
    turn: str | list[ToolResult] = text
    while True:
        done = None
        async for event in session.stream(turn, TurnOptions(stream=True)):
            if isinstance(event, Notice):
                notices.append(event.text)
            elif isinstance(event, Done):
                done = event
        assert done is not None
        if not done.message.tool_calls:
            await session.aclose()
            return done, notices
        turn = [ToolResult(call_id=c.id, content="cloudy") for c in done.message.tool_calls]


def test_a_resume_splices_its_forms_and_the_next_turn_is_accepted(tmp_path: Path) -> None:
    with GeminiEmulator() as emu:
        session_id = _two_loops(emu, tmp_path)
        last, answer = emu.received[-1], emu.answers[-1]
        log = RequestLog(tmp_path / "log")
        resumed = Session.resume(open_store(None, tmp_path), session_id, log=log)
        expected = resumed.request_bytes([user(NEXT)], stream=True)
        assert resumed._history.decoded is False  # read from the stored forms
        ordinary = Session.resume(open_store(None, tmp_path), session_id)
        assert len(ordinary.history) == resumed.turns  # decodes (and verifies) every row
        assert ordinary.request_bytes([user(NEXT)], stream=True) == expected

        before, checked = len(emu.received), len(emu.checks)
        done, notices = asyncio.run(_send(resumed, NEXT))
        sent, *rest = emu.received[before:]
        assert rest and all(r.status == 200 for r in [sent, *rest])
        assert done.message.text and not notices
        assert sent.raw == expected  # the spliced bytes went out as built
        # Every signature issued before the resume is back, byte for byte, on its own part.
        carried = signed_parts(sent.body)
        assert carried == signed_parts(last.body) + issued_parts(answer)
        assert emu.checks[checked].verified == [orjson.loads(s) for _, s in carried]
        assert all(s in sent.raw for _, s in carried)
        # Storing the new turns' forms (results of a call made since the resume) and sending
        # them decoded nothing.
        assert resumed._history.decoded is False
        record, *_ = log.read()
        assert record["carriers"] == {SIG: len(carried)} and record["status"] == 200
        again = Session.resume(open_store(None, tmp_path), session_id)
        follow = again.request_bytes([user("thanks")], stream=True)
        assert again._history.decoded is False
        plain = Session.resume(open_store(None, tmp_path), session_id)
        assert len(plain.history) == again.turns  # decoded: the ordinary encode
        assert plain.request_bytes([user("thanks")], stream=True) == follow


def test_a_rejected_spliced_request_is_repaired_with_one_retry(tmp_path: Path) -> None:
    with GeminiEmulator() as emu:
        session_id = _two_loops(emu, tmp_path)
        issued = set(emu.issued)
        resumed = Session.resume(open_store(None, tmp_path), session_id)
        expected = resumed.request_bytes([user(NEXT)], stream=True)
        assert resumed._history.decoded is False
        emu.fail_next(400, {"error": {"code": 400, "message": "Corrupted thought signature.",
                                      "status": "INVALID_ARGUMENT"}})
        before = len(emu.received)
        done, notices = asyncio.run(_send(resumed, NEXT))
        rejected, retry, *rest = emu.received[before:]
        assert (rejected.status, retry.status) == (400, 200) and done.message.text
        assert rejected.raw == expected  # the spliced request was the one rejected
        assert len(notices) == 1 and "rejected a replayed thought signature" in notices[0]
        # What it carried is fingerprinted, exactly: read back by re-encoding the decoded
        # history, as for a request that was never spliced.
        refused = {orjson.loads(s) for _, s in signed_parts(rejected.body)}
        assert refused and refused <= issued
        assert resumed.fingerprints == frozenset(fingerprint(SIG, s) for s in refused)
        again = [orjson.loads(s) for _, s in signed_parts(retry.body)]
        assert again and set(again) == {DUMMY}  # full context or none: no old signature
        assert all(r.status == 200 for r in rest)
        # The lesson is stored: the next resume does not pay for it again.
        later = Session.resume(open_store(None, tmp_path), session_id)
        assert later.fingerprints == resumed.fingerprints
        body = later.request_bytes([user("thanks")], stream=True)
        assert not any(orjson.dumps(s) in body for s in refused)
