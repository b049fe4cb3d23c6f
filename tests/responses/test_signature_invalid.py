"""``thinking_signature_invalid`` (openclaw/openclaw#92941, NousResearch/hermes-agent#70595):
a Responses upstream could not decrypt one replayed reasoning item's ``encrypted_content``. The
one retry leaves off that value only — the item, its id and summary, every other item and the
order all stay — and the lesson is kept, so the value is never sent again.

End to end through the public ``Session`` on the Responses emulator (``ResponsesEmulator.
invalidate``: a well-formed value it can no longer decrypt), compared as bytes; the classifier's
reading of the error body is pinned beside it. The ``codex`` personality takes a reasoning item
back bare, as the retry of openclaw PR #92941 relies on; OpenAI itself (``openai``) with
``store: false`` answers "Item with id … not found" to a bare item, and then the item is dropped
whole from the next request on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from responses_support import (
    LOOKUP,
    answer_calls,
    done_of,
    notices,
    provider_at,
    raw_contains,
    reasoning_in,
    store_at,
    turn,
)

from thoughtline.codecs.openai_responses.encode import bare_fingerprint, item_fingerprint
from thoughtline.codecs.openai_responses.rejections import classify
from thoughtline.errors import ProviderError
from thoughtline.events import Done
from thoughtline.session import Session
from thoughtline.testing.responses_emulator import ResponsesEmulator
from thoughtline.testing.server import Received

CODE = "thinking_signature_invalid"


@pytest.fixture
def emu() -> Iterator[ResponsesEmulator]:
    with ResponsesEmulator("codex") as emulator:
        yield emulator


def _bare(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != "encrypted_content"}


def _two_loops(emu: ResponsesEmulator, home: Path) -> tuple[Session, Done]:
    """A finished tool loop, then a new question whose tool call is waiting for its result:
    three reasoning items issued (two before the current tool loop, one in it)."""
    session = Session.create(store_at(home), provider_at(emu), tools=[LOOKUP])
    first = done_of(turn(session, "what is the weather in Oslo?"))
    done_of(turn(session, answer_calls(first)))
    second = done_of(turn(session, "and in Bergen?"))
    assert len(emu.issued_items) == 3
    return session, second


def _items(record: Received) -> list[bytes]:
    return [orjson.dumps(i) for i in record.body["input"]]


def _retried_without(rejected: Received, retry: Received,
                     victims: list[Mapping[str, Any]]) -> None:
    """``retry`` is ``rejected`` with exactly the victims' encrypted_content left off: every
    other input item byte-identical, in the same order, and nothing else in the body changed."""
    before, after = _items(rejected), _items(retry)
    assert len(before) == len(after)
    expected = list(before)
    for victim in victims:
        at = before.index(orjson.dumps(victim))  # the victim went out verbatim the first time
        expected[at] = orjson.dumps(_bare(victim))
    assert after == expected
    assert {k: v for k, v in rejected.body.items() if k != "input"} == {
        k: v for k, v in retry.body.items() if k != "input"}
    raw = rejected.raw
    for victim in victims:  # and as whole request bytes: only `,"encrypted_content":"…"` went
        raw = raw.replace(b',"encrypted_content":' + orjson.dumps(victim["encrypted_content"]),
                          b"", 1)
    assert raw == retry.raw


def test_a_named_value_is_left_off_once_and_for_good(emu: ResponsesEmulator,
                                                     home: Path) -> None:
    session, second = _two_loops(emu, home)
    victim = emu.issued_items[1]
    emu.invalidate(victim["encrypted_content"])
    before = len(emu.received)
    events = turn(session, answer_calls(second, "snow"))
    assert "snow" in done_of(events).message.text
    assert len(emu.received) == before + 2  # the rejected request and exactly one retry
    rejected, retry = emu.received[-2:]
    assert (rejected.status, retry.status) == (400, 200)
    error = error_for(emu, rejected)
    assert error["code"] == CODE and error["param"] is None  # as seen: no param names it
    assert "..." in error["message"]  # it quotes the value by its ends
    _retried_without(rejected, retry, [victim])
    sent = [i for i in reasoning_in(retry) if i.get("id") == victim["id"]]
    assert sent == [_bare(victim)] and sent[0]["summary"] == victim["summary"]
    assert len(notices(events)) == 1 and "ids and order are kept" in notices(events)[0]

    # learned for good: a resumed session sends the item bare from its first request on
    resumed = Session.resume(store_at(home), session.id)
    assert resumed.fingerprints == {bare_fingerprint(victim)}
    before = len(emu.received)
    done_of(turn(resumed, "thanks"))
    last = emu.received[-1]
    assert len(emu.received) == before + 1 and last.status == 200  # no rejection, no retry
    assert not raw_contains(last, victim["encrypted_content"])
    assert raw_contains(last, _bare(victim))
    others = [i for i in emu.issued_items if i["id"] != victim["id"]]
    assert all(raw_contains(last, item) for item in others[:3])  # every other value kept


def test_an_unnamed_rejection_bares_the_stale_values_only(emu: ResponsesEmulator,
                                                         home: Path) -> None:
    session, second = _two_loops(emu, home)
    stale, current = emu.issued_items[:2], emu.issued_items[2]
    emu.invalidate(stale[0]["encrypted_content"], named=False)
    events = turn(session, answer_calls(second, "snow"))
    assert "snow" in done_of(events).message.text
    rejected, retry = emu.received[-2:]
    assert (rejected.status, retry.status) == (400, 200)
    error = error_for(emu, rejected)
    assert error == {"message": "Encrypted content could not be decrypted or parsed.",
                     "type": "invalid_request_error", "param": None, "code": CODE}
    # named nothing: the values from before the current tool loop go, never the loop's own
    _retried_without(rejected, retry, list(stale))
    assert raw_contains(retry, current)
    assert session.fingerprints == {bare_fingerprint(i) for i in stale}


def test_an_upstream_that_looks_the_id_up_fails_the_retry_then_drops_the_item(
        home: Path) -> None:
    with ResponsesEmulator("openai") as openai:
        session, second = _two_loops(openai, home)
        victim = openai.issued_items[1]
        openai.invalidate(victim["encrypted_content"])
        with pytest.raises(ProviderError, match="not found"):
            turn(session, answer_calls(second, "snow"))
        assert [r.status for r in openai.received[-2:]] == [400, 400]  # never a third request
        _retried_without(*openai.received[-2:], [victim])
        # the retry's own rejection was learned: from now on the item stays home, whole
        done_of(turn(session, answer_calls(second, "snow")))
        last = openai.received[-1]
        assert last.status == 200 and not raw_contains(last, _bare(victim))
        assert all(raw_contains(last, i) for i in openai.issued_items[:3] if i is not victim)


def error_for(emu: ResponsesEmulator, record: Received) -> dict[str, Any]:
    """The error the emulator answers to ``record``'s exact bytes (sent again: it is
    deterministic, and its record keeps no response bodies)."""
    response = httpx.post(f"{emu.base_url}/responses", content=record.raw,
                          headers={"authorization": "Bearer sk-fake",
                                   "content-type": "application/json"})
    assert response.status_code == 400
    return response.json()["error"]


# --- the classifier's reading of the body --------------------------------------------------------


def _sent(values: list[str]) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "q"}]
    for n, value in enumerate(values):
        items += [{"id": f"rs_{n}", "type": "reasoning", "summary": [],
                   "encrypted_content": value},
                  {"id": f"fc_{n}", "type": "function_call", "call_id": f"c{n}", "name": "f",
                   "arguments": "{}"},
                  {"type": "function_call_output", "call_id": f"c{n}", "output": "ok"}]
    return {"model": "gpt-5.5", "input": items}


def _body(message: str, param: str | None = None, code: str = CODE) -> str:
    return orjson.dumps({"error": {"message": message, "type": "invalid_request_error",
                                   "param": param, "code": code}}).decode()


VALUES = ["gAAAAABoneAAAAxyzQ==", "gAAAAABtwoBBBBuvwQ==", "gAAAAABthreeCCCCrst="]


def test_the_code_wins_over_the_undecryptable_phrase_and_bares_the_quoted_value() -> None:
    sent = _sent(VALUES)
    # the body seen in the wild (kaitranntt/ccs #1402): the value quoted by its ends
    lesson = classify(400, _body("The encrypted content gAAA...uvwQ== could not be verified. "
                                 "Reason: Encrypted content could not be decrypted or parsed."),
                      sent)
    assert lesson is not None and lesson.wording == "signature-invalid"
    assert lesson.fingerprints == {bare_fingerprint(sent["input"][4])}
    # the same message under invalid_encrypted_content drops the whole item, as before
    whole = classify(400, _body("The encrypted content gAAA...uvwQ== could not be verified. "
                                "Reason: Encrypted content could not be decrypted or parsed.",
                                code="invalid_encrypted_content"), sent)
    assert whole is not None and whole.fingerprints == {item_fingerprint(sent["input"][4])}


def test_an_item_named_by_id_or_param_is_the_only_one_bared() -> None:
    sent = _sent(VALUES)
    by_id = classify(400, _body("The encrypted content for item rs_2 could not be verified. "
                                "Reason: Encrypted content could not be decrypted or parsed."),
                     sent)
    assert by_id is not None and by_id.fingerprints == {bare_fingerprint(sent["input"][7])}
    # No source shows a `param` on this error; were one to name the position, it is read.
    by_param = classify(400, _body("Encrypted content could not be decrypted or parsed.",
                                   param="input[1].encrypted_content"), sent)
    assert by_param is not None and by_param.fingerprints == {bare_fingerprint(sent["input"][1])}


def test_unnamed_with_one_value_sent_bares_it_and_with_none_teaches_nothing() -> None:
    one = _sent(VALUES[:1])
    lesson = classify(400, _body("Encrypted content could not be decrypted or parsed."), one)
    assert lesson is not None and lesson.fingerprints == {bare_fingerprint(one["input"][1])}
    assert classify(400, _body("Encrypted content could not be decrypted or parsed."),
                    {"input": [{"role": "user", "content": "q"}]}) is None
