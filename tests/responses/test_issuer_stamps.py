"""Issuer stamps on encrypted reasoning items (issue 28 item 5; NousResearch/hermes-agent#119336):
each encrypted item remembers who it was issued to (the route's account,
else the key's identity — never the key), and a relay's "was not issued to this caller" drops
exactly that issuer's items, in one retry, and learns it once."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from responses_support import KEY_ENV, LOOKUP, answer_calls, done_of, notices, store_at, turn

from thoughtline.config import ProviderConfig
from thoughtline.session import Session
from thoughtline.testing.responses_emulator import ResponsesEmulator
from thoughtline.turn import issuer_of

MODEL = "openai/gpt-5.5"
FIRST_KEY, SECOND_KEY = "sk-relay-first-caller-0001", "sk-relay-second-caller-0002"


@pytest.fixture
def backends() -> Iterator[tuple[ResponsesEmulator, ResponsesEmulator]]:
    """One relay host, two backends that seal for different callers (the relay's rotation)."""
    with ResponsesEmulator("relay", issuer="caller-one") as one, \
            ResponsesEmulator("relay", issuer="caller-two") as two:
        yield one, two


def _at(emu: ResponsesEmulator) -> ProviderConfig:
    return ProviderConfig(id="some-relay", api="openai-responses", base_url=emu.base_url,
                          key_env=KEY_ENV, model=MODEL)


def _encrypted_accounts(session: Session) -> list[str]:
    return [p.origin.account for m in session.history for p in m.reasoning
            if p.kind == "encrypted" and p.origin is not None]


def test_the_stamp_is_the_account_else_a_key_identity_never_the_key() -> None:
    provider = ProviderConfig(id="some-relay", api="openai-responses", base_url="https://x.test",
                              key_env=KEY_ENV, model=MODEL)
    os.environ[KEY_ENV] = FIRST_KEY
    first = issuer_of(provider)
    os.environ[KEY_ENV] = SECOND_KEY
    assert first.startswith("key-") and first != issuer_of(provider)
    assert FIRST_KEY not in first and FIRST_KEY[-8:] not in first
    assert issuer_of(ProviderConfig(id="v", api="openai-responses", base_url="https://x.test",
                                    key_env=KEY_ENV, model=MODEL, project="org-7")) == "org-7"


def test_not_issued_to_this_caller_drops_only_that_issuers_items_and_learns_it_once(
        backends: tuple[ResponsesEmulator, ResponsesEmulator], home: Path) -> None:
    one, two = backends
    os.environ[KEY_ENV] = FIRST_KEY
    session = Session.create(store_at(home), _at(one), tools=[LOOKUP])
    first = done_of(turn(session, "what is the weather in Oslo?"))
    done_of(turn(session, answer_calls(first)))
    old = set(_encrypted_accounts(session))
    assert len(old) == 1 and old.pop().startswith("key-")

    os.environ[KEY_ENV] = SECOND_KEY  # the relay now serves this caller from another backend
    session.set_provider(_at(two))
    events = turn(session, "and in Bergen?")
    second = done_of(events)
    assert any("issued to another caller" in n for n in notices(events))
    assert second.message.tool_calls
    rejected, retried = two.received[0], two.received[1]
    assert rejected.status == 400 and retried.status == 200  # one rejection, one retry
    assert len([i for i in rejected.body["input"] if i.get("type") == "reasoning"]) == 2
    assert not [i for i in retried.body["input"] if i.get("type") == "reasoning"]
    events = turn(session, answer_calls(second))
    told = notices(events)
    assert not told and two.received[-1].status == 200 and len(two.received) == 3
    # the second caller's own item went back byte for byte; the first caller's stayed home
    sent = [orjson.dumps(i) for i in two.received[-1].body["input"]
            if i.get("type") == "reasoning"]
    assert sent == [orjson.dumps(two.issued_items[0])]

    done_of(turn(session, "thanks, and tomorrow?"))
    assert len(two.received) == 4 and two.received[-1].status == 200  # learned once
    accounts = _encrypted_accounts(session)
    assert len(set(accounts)) == 2 and len(accounts) == 5  # nothing was deleted from history
    with sqlite3.connect(home / "state.db") as db:  # the stamp, never the key
        dumped = "\n".join(str(row) for table in ("messages", "sessions")
                           for row in db.execute(f"SELECT * FROM {table}"))
    assert FIRST_KEY not in dumped and SECOND_KEY not in dumped
