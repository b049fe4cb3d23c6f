"""Two store instances on one PostgreSQL database play two gateways sharing sessions.

Stand-in for the two-``thoughtline serve`` test until the gateway lands: every request of a
tool-calling conversation is sent by a session freshly resumed from the *other* instance (its
own connection pool, nothing in memory carried over), against a loopback OpenRouter emulator on
the Anthropic route (signed reasoning in ``reasoning_details``). Replay is checked from what the
emulator received: every earlier assistant message comes back byte-identical in every later
request, and every opaque value the emulator issued comes back. Then 20 conversations run
concurrently, alternating between both instances: no turn is lost or interleaved.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from store_backends import pg_url

from thoughtline import Session, ToolResult, ToolSpec, TurnOptions, config
from thoughtline.store.postgres import PostgresStore
from thoughtline.testing import ChatEmulator

MODEL = "anthropic/claude-sonnet-4.5"
TOOLS = (ToolSpec(name="weather", description="Current weather for a city",
                  parameters={"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}),)


@pytest.fixture
def gateways(pg_schema: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    a, b = (PostgresStore(pg_url(pg_schema, app=f"{pg_schema}_{n}")) for n in "ab")
    yield a, b
    a.close()
    b.close()


@pytest.fixture(scope="module")
def emu() -> Iterator[ChatEmulator]:
    with ChatEmulator("openrouter", require_auth=True) as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(config.provider("openrouter").key_env, "sk-fake-shared-sessions")


def _assistants(body: Any) -> list[bytes]:
    return [orjson.dumps(m) for m in body["messages"] if m.get("role") == "assistant"]


async def _send_on(store: PostgresStore, sid: str, turn: Any) -> Any:
    """One request as a gateway would serve it: resume from the store, send, close."""
    session = Session.resume(store, sid)
    try:
        return await session.send(turn, TurnOptions(stream=True))
    finally:
        await session.aclose()


async def _conversation(stores: tuple[PostgresStore, PostgresStore], emu: ChatEmulator,
                        marker: str, loops: int, first: int = 0,
                        issued: list[set[str]] | None = None) -> str:
    """``loops`` × (question → tool call → result → answer), each send on the other store;
    ``issued`` gets, per send, the opaque values the emulator issued answering it."""
    prov = config.provider("openrouter", base_url=emu.base_url, model=MODEL)
    sid = Session.create(stores[first], prov, tools=TOOLS, title=marker).id
    sends = first

    async def send(turn: Any) -> Any:
        nonlocal sends
        sends += 1
        before = set(emu.issued)
        done = await _send_on(stores[sends % 2], sid, turn)
        if issued is not None:
            issued.append(set(emu.issued) - before)
        return done

    for i in range(loops):
        done = await send(f"{marker} question {i}: the weather in city {i}?")
        calls = done.message.tool_calls
        assert calls, "the emulator calls the tool first"
        done = await send([ToolResult(call_id=c.id, content=f"{marker} sunny, {20 + i}")
                           for c in calls])
        assert done.message.text and not done.message.tool_calls
    return sid


def _requests_of(emu: ChatEmulator, marker: str, start: int) -> list[Any]:
    out = []
    for received in emu.received[start:]:
        body = received.body
        if not isinstance(body, dict) or not received.path.endswith("/chat/completions"):
            continue
        users = [m for m in body.get("messages", ()) if m.get("role") == "user"]
        if users and str(users[0].get("content", "")).startswith(marker):
            out.append(body)
    return out


def test_a_conversation_alternating_between_two_stores_replays_byte_identical(
        gateways: tuple[PostgresStore, PostgresStore], emu: ChatEmulator) -> None:
    start, issued = len(emu.received), []
    sid = asyncio.run(_conversation(gateways, emu, "[alternate]", loops=3, issued=issued))

    bodies = _requests_of(emu, "[alternate]", start)
    assert len(bodies) == 6  # one request per send: nothing was refused and retried
    for earlier, later in itertools.pairwise(bodies):
        before = _assistants(earlier)
        assert _assistants(later)[:len(before)] == before  # earlier turns: byte-identical
        assert len(_assistants(later)) == len(before) + 1
    assert all(issued[:-1]), "the emulator signed the reasoning of every answer"
    for n, values in enumerate(issued[:-1]):  # each answer's values, in every later request
        for later in bodies[n + 1:]:
            sent = orjson.dumps(later)
            assert all(orjson.dumps(v)[1:-1] in sent for v in values), n
    for store in gateways:
        assert store.get_session(sid).turns == 12  # 3 × (user, call, result, answer)


def test_twenty_concurrent_conversations_across_two_stores_lose_nothing(
        gateways: tuple[PostgresStore, PostgresStore], emu: ChatEmulator) -> None:
    async def all_of_them() -> list[str]:
        return await asyncio.gather(*(_conversation(gateways, emu, f"[c{n:02}]", loops=2,
                                                    first=n % 2) for n in range(20)))

    sids = asyncio.run(all_of_them())
    assert len(set(sids)) == 20
    for n, sid in enumerate(sids):
        loaded = gateways[(n + 1) % 2].load_history(sid)
        assert loaded.problems == ()
        roles = [m.message.role for m in loaded.messages]
        assert roles == ["user", "assistant", "tool", "assistant"] * 2
        texts = [m.message.text for m in loaded.messages if m.message.role == "user"]
        assert all(t.startswith(f"[c{n:02}]") for t in texts)
