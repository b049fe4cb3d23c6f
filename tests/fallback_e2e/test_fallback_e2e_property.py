"""Property: whatever the upstream answers, one turn never costs more than two requests.

Each example drives a fresh session on one of several routes (a strict server the route table
takes for a local one, a lenient local server, a must-echo route, a local route at a must-echo
server, an OpenRouter-format route) through a few turns. Before each turn a drawn sequence of
answers is queued on the emulator (status and body: real provider wordings, mangled ones, random
text); once they run out the emulator answers as its provider would (which may itself be a 400).

The transport's own bounded retries (429, 5xx, 409) are out of scope here: they are turned off
(``max_retries=0``) so that every request the emulator sees is one the fallback decided to send.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fallback_e2e_support import (
    CARRIERS,
    LOOKUP,
    REAL_BODIES,
    answer_call,
    assistants,
    body_text,
    create,
    provider_at,
    resume,
    send,
    store_at,
    stored,
)
from hypothesis import event, given, settings
from hypothesis import strategies as st

from thoughtline.codecs.openai_chat import rejections as fallback
from thoughtline.messages import Message, Origin, ToolCall, ToolResult, tool_results
from thoughtline.testing import ChatEmulator
from thoughtline.transport import TransportConfig

NO_RETRIES = TransportConfig(max_retries=0)
STATUSES = (400, 401, 404, 409, 422, 429, 500)
# (personality, provider id, model, offer tools)
ROUTES = (
    ("strict-custom", "custom", "relay-model", True),
    ("plain", "custom", "relay-model", False),
    ("deepseek", "deepseek", "deepseek-reasoner", True),
    ("deepseek", "custom", "relay-model", True),
    ("kimi", "custom", "relay-model", True),
    ("openrouter", "openrouter", "openai/gpt-5", False),
)
PHRASES = ("unknown field", "Extra inputs are not permitted, field:", "no such field",
           "Unrecognized request argument supplied:", "unexpected field", "unknown key",
           "Unknown parameter:", "property is unsupported", "invalid value for")


@pytest.fixture(scope="module")
def emulators() -> Iterator[dict[str, ChatEmulator]]:
    running = {name: ChatEmulator(name, require_auth=False).start()
               for name in {route[0] for route in ROUTES}}
    yield running
    for emu in running.values():
        emu.stop()


def test_the_sample_bodies_exercise_every_wording() -> None:
    seen = {fallback.classify(400, body_text(body), sent=CARRIERS, must_echo=echo).wording
            for body in REAL_BODIES for echo in (False, True)}
    assert {w.id for w in fallback.WORDINGS} <= seen


bodies = st.one_of(
    st.sampled_from(REAL_BODIES),
    st.text(max_size=80),
    st.builds(lambda body, head, tail: head + body_text(body) + tail,
              st.sampled_from(REAL_BODIES), st.text(max_size=12), st.text(max_size=12)),
    st.builds(lambda phrase, carrier, index: {"error": {"message":
                                                        f"{phrase} 'messages.{index}.{carrier}'"}},
              st.sampled_from(PHRASES), st.sampled_from(sorted(CARRIERS)),
              st.integers(0, 9)),
)
answers = st.lists(st.tuples(st.sampled_from(STATUSES), bodies), max_size=3)


def _bare_tool_turn() -> list[Message]:
    """A reasoning-less assistant tool call (as if imported) and its result."""
    call = ToolCall(id="call_imported01", name="lookup", arguments='{"query": "x"}')
    origin = Origin(api="openai-chat", provider="custom", host="127.0.0.1", model="relay-model")
    return [Message(role="assistant", parts=(call,), origin=origin),
            tool_results([ToolResult(call_id=call.id, content="x")])]


def _next_turn(session: Any, n: int) -> Any:
    last = session.history[-1] if session.history else None
    if last is not None and last.role == "assistant" and last.tool_calls:
        return answer_call(session, f"result {n}")
    return f"question {n}"


def _drain(emu: ChatEmulator, queued: list[tuple[int, Any]]) -> None:
    """Consume injected answers no request of the turn used, so the next turn starts clean."""
    for status, _ in queued:
        reply = httpx.post(f"{emu.base_url}/chat/completions", timeout=30,
                           json={"model": "drain", "messages": [{"role": "user", "content": "."}]})
        assert reply.status_code == status


@settings(max_examples=40, deadline=None)
@given(route=st.sampled_from(ROUTES), imported=st.booleans(),
       turns=st.lists(answers, min_size=1, max_size=3))
def test_a_turn_never_costs_more_than_two_requests(
        emulators: dict[str, ChatEmulator], route: tuple[str, str, str, bool], imported: bool,
        turns: list[list[tuple[int, Any]]]) -> None:
    personality, provider_id, model, tools = route
    emu = emulators[personality]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        store = store_at(home)
        session = create(store, provider_at(emu, provider_id, model),
                         tools=[LOOKUP] if tools else ())
        assert send(session, "hello", config=NO_RETRIES).error is None
        if imported:
            store.append(session.id, _bare_tool_turn())
            session = resume(store, session.id)

        for n, queued in enumerate(turns):
            for status, body in queued:
                emu.fail_next(status, body)
            history, in_memory = stored(store, session.id), session.history
            verdicts, ledger = session.verdicts, store.verdicts()
            start = len(emu.received)

            outcome = send(session, _next_turn(session, n), config=NO_RETRIES)

            sent = emu.received[start:]
            _drain(emu, queued[len(sent):])
            assert 1 <= len(sent) <= 2, [r.status for r in sent]
            event(f"{len(sent)} request(s), {'failed' if outcome.error else 'answered'}")
            assert len(outcome.notices) == len(sent) - 1
            if len(sent) == 2:
                # A retry happens only after a 4xx that taught something new, and it differs.
                assert 400 <= sent[0].status < 500
                assert session.verdicts != verdicts and store.verdicts() != ledger
                assert assistants(sent[0]) != assistants(sent[1])
            elif outcome.error is not None:
                assert (session.verdicts, store.verdicts()) == (verdicts, ledger)
            if outcome.error is not None:
                # The error surfaces unchanged: the last answer, as the upstream sent it.
                assert outcome.error.status == sent[-1].status
                if len(sent) <= len(queued):
                    status, body = queued[len(sent) - 1]
                    assert (outcome.error.status, outcome.error.body) == (
                        status, orjson.dumps(body).decode())
                assert stored(store, session.id) == history and session.history == in_memory
            else:
                assert sent[-1].status == 200 and outcome.done.message.role == "assistant"
                after = stored(store, session.id)
                assert after[:len(history)] == history and len(after) == len(history) + 2
        store.close()
