"""What a rejection teaches stays with the tenant whose request drew it (issue 23, item 5).

A client's own top-level key named like a reasoning carrier made a relay answer "unrecognized
argument", and the gateway learned "drop reasoning" into the global ledger: every tenant's next
request went out without its reasoning. A lesson drawn from a field the client supplied is never
learned; any other lesson drawn on a tenant's request is kept for that tenant only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gateway_support import running_gateway

from thoughtline.testing import ChatEmulator

ALICE, BOB = "token-alice-lessons-41d2", "token-bob-lessons-9e07"
MODEL = "cu/demo-reasoner"  # a relay route: replays reasoning_content, no must-echo rule
UPSTREAM = {"name": "cu", "provider": "custom", "model": "demo-reasoner"}
UNRECOGNIZED = {"error": {"message": "Unrecognized request argument supplied: reasoning_content",
                          "type": "invalid_request_error", "param": None, "code": None}}


@pytest.fixture
def relay() -> Iterator[ChatEmulator]:
    with ChatEmulator("plain") as emu:
        yield emu


def _ask(base_url: str, token: str, messages: list[dict[str, Any]],
         **extra: Any) -> httpx.Response:
    body = {"model": MODEL, "messages": messages, **extra}
    return httpx.post(base_url + "/chat/completions", content=orjson.dumps(body), timeout=30,
                      headers={"content-type": "application/json",
                               "authorization": f"Bearer {token}"})


def _first_turn(base_url: str, token: str, text: str) -> list[dict[str, Any]]:
    """One answered turn, as a client that drops reasoning keeps it."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    answer = _ask(base_url, token, messages)
    assert answer.status_code == 200, answer.text
    message = answer.json()["choices"][0]["message"]
    assert message.get("reasoning_content")  # the upstream reasoned: the gateway stored it
    return [*messages, {"role": "assistant", "content": message["content"]},
            {"role": "user", "content": "And then?"}]


def test_a_rejection_of_the_clients_own_key_is_never_learned(
        relay: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(relay, tmp_path, tokens=[ALICE, BOB], **UPSTREAM) as gw:
        alice = _first_turn(gw.base_url, ALICE, "Hello from Alice")
        bob = _first_turn(gw.base_url, BOB, "Hello from Bob")
        relay.fail_next(400, UNRECOGNIZED)
        refused = _ask(gw.base_url, ALICE, alice, reasoning_content="my own top-level key")
        assert refused.status_code == 400  # the client's own key: its error stands, no retry
        assert b"reasoning_content" in relay.received[-1].raw
        answered = _ask(gw.base_url, BOB, bob)
        assert answered.status_code == 200, answered.text
        again = _ask(gw.base_url, ALICE, alice)
        assert again.status_code == 200, again.text
        ledger = gw.store.verdicts()
    sent = [orjson.loads(r.raw) for r in relay.received]
    assert len(sent) == 5  # two first turns, the refused request (not retried), Bob, Alice
    for body in sent[3:]:
        assistant = [m for m in body["messages"] if m["role"] == "assistant"]
        assert assistant and all(m.get("reasoning_content") for m in assistant)
    assert ledger == []


def test_a_lesson_learned_on_one_tenants_request_stays_with_that_tenant(
        relay: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(relay, tmp_path, tokens=[ALICE, BOB], **UPSTREAM) as gw:
        alice = _first_turn(gw.base_url, ALICE, "Hello from Alice")
        bob = _first_turn(gw.base_url, BOB, "Hello from Bob")
        alice_later = _first_turn(gw.base_url, ALICE, "Alice again, another conversation")
        relay.fail_next(400, UNRECOGNIZED)  # the replayed carrier, as a strict relay says it
        taught = _ask(gw.base_url, ALICE, alice)
        assert taught.status_code == 200, taught.text  # learned, retried without reasoning
        assert _ask(gw.base_url, BOB, bob).status_code == 200
        assert _ask(gw.base_url, ALICE, alice_later).status_code == 200
        global_ledger = gw.store.verdicts()
        tenants = {s.tenant for s in gw.store.list_sessions()}
    sent = [orjson.loads(r.raw) for r in relay.received]
    assert [r.status for r in relay.received] == [200, 200, 200, 400, 200, 200, 200]

    def carried(body: dict[str, Any]) -> bool:
        return any(m.get("reasoning_content") for m in body["messages"]
                   if m["role"] == "assistant")

    assert carried(sent[3]) and not carried(sent[4])  # Alice's rejection, then her retry
    assert carried(sent[5])  # Bob's request still carries his reasoning
    assert not carried(sent[6])  # Alice's other conversation uses what her request taught
    assert global_ledger == []  # nothing in the global ledger: a tenant's client caused it
    assert len(tenants) == 2
