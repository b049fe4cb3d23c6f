"""Issue 9 "done when": an API added without editing session.py, replay.py or transport/.

The stub API's codec and emulator live only in ``tests/core/stub_api.py``; it is registered at run
time. A whole conversation — streamed and not, resumed from the store, with a rejected opaque value
repaired by exactly one retry that is never needed again — runs through the real ``Session``.
"""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import stub_api
from stub_api import CODEC, StubEmulator, seal

from thoughtline import Session, TurnOptions, open_store
from thoughtline.codecs import registry
from thoughtline.codecs.registry import resolve
from thoughtline.config import ProviderConfig
from thoughtline.messages import Message, Reasoning, Text, fingerprint

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def stub() -> Iterator[StubEmulator]:
    registry.register("stub", CODEC)
    try:
        with StubEmulator() as emulator:
            yield emulator
    finally:
        registry.unregister("stub")


@pytest.fixture()
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("STUB_KEY", "stub-secret-key")
    return "stub-secret-key"


def _provider(stub: StubEmulator) -> ProviderConfig:
    return ProviderConfig(id="stub-provider", api="stub", base_url=stub.base_url,
                          key_env="STUB_KEY", model="stub-1")


def test_the_core_modules_do_not_know_the_stub_api() -> None:
    for relative in ("session.py", "replay.py", "turn.py", "transport/http.py",
                     "transport/auth.py", "codecs/registry.py"):
        text = (ROOT / "src" / "thoughtline" / relative).read_text("utf-8")
        assert "stub" not in text.lower(), relative


def test_a_conversation_on_the_stub_api(stub: StubEmulator, key: str, tmp_path: Path) -> None:
    async def scenario() -> str:
        with open_store(tmp_path / "state.db", tmp_path) as store:
            session = Session.create(store, _provider(stub), title="stub")
            first = await session.send("hello", TurnOptions(stream=True))
            second = await session.send("again", TurnOptions(stream=False))
            await session.aclose()
            assert first.message.text == "reply 1 " and second.message.text == "reply 2"
            return session.id

    session_id = asyncio.run(scenario())
    # The sealed value of turn 1 came back verbatim on request 2, with the codec's headers and
    # the key in the header the codec asked for.
    headers, body = stub.received[1]
    assert headers["x-api-key"] == key and headers["stub-version"] == "1"
    assert "authorization" not in headers
    assert orjson.dumps(body["turns"][1]) == orjson.dumps(
        {"role": "assistant", "text": "reply 1 ", "sealed": seal("reply 1 ")})

    async def resumed() -> None:
        with open_store(tmp_path / "state.db", tmp_path) as store:
            session = Session.resume(store, session_id)
            assert session.route.api == "stub" and session.route.row == "stub-any"
            await session.send("third", TurnOptions(stream=True))
            await session.aclose()

    asyncio.run(resumed())
    _, body = stub.received[2]
    assert [t.get("sealed") for t in body["turns"]] == [
        None, seal("reply 1 "), None, seal("reply 2"), None]
    assert stub.statuses == [200, 200, 200]


def test_a_rejected_opaque_value_is_repaired_once_and_never_resent(
        stub: StubEmulator, key: str, tmp_path: Path) -> None:
    tampered = Message(role="assistant", parts=(
        Reasoning(kind="signed", signature="0" * 64,
                  origin=stub_api._message("x", None, _origin(stub)).origin),
        Text(text="forged")), origin=_origin(stub))

    async def scenario() -> tuple[Session, list[Message]]:
        with open_store(tmp_path / "state.db", tmp_path) as store:
            session = Session.create(store, _provider(stub))
            session._append([Message(role="user", parts=(Text(text="q"),)), tampered])
            notices = []
            async for event in session.stream("next", TurnOptions(stream=False)):
                notices.append(event)
            resumed = Session.resume(store, session.id)
            await resumed.send("after resume", TurnOptions(stream=False))
            await session.aclose()
            await resumed.aclose()
            # (read while the store is open: the resumed request was spliced from the stored
            # turns' forms, so nothing was decoded yet)
            return resumed, list(resumed.history)

    resumed, history = asyncio.run(scenario())
    assert stub.statuses == [400, 200, 200]  # one rejection, one retry, no second rejection
    assert fingerprint("sealed", "0" * 64) in resumed.fingerprints
    assert "sealed" not in stub.received[1][1]["turns"][1]
    assert "sealed" not in stub.received[2][1]["turns"][1]
    # Stored history keeps the rejected value exactly: only requests leave it out.
    assert history[1].reasoning[0].signature == "0" * 64


def test_routes_json_reports_the_stub_api(stub: StubEmulator) -> None:
    route = resolve("stub", "anything", "http://127.0.0.1:1/stub", "stub-1")
    assert route.to_json() == {"route": "stub-any", "api": "stub", "carriers": [],
                               "must_echo": False, "body_extras": {}, "native": [],
                               "replay_sealed": True}


def test_no_key_value_reaches_the_store(stub: StubEmulator, key: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        with open_store(tmp_path / "state.db", tmp_path) as store:
            session = Session.create(store, _provider(stub))
            await session.send("hello", TurnOptions(stream=False))
            await session.aclose()

    asyncio.run(scenario())
    dump = subprocess.run(["sqlite3", str(tmp_path / "state.db"), ".dump"], capture_output=True,
                          check=False).stdout if _has_sqlite3() else (tmp_path / "state.db"
                                                                      ).read_bytes()
    assert key.encode() not in dump
    assert hashlib.sha256(key.encode()).hexdigest().encode() not in dump


def _has_sqlite3() -> bool:
    from shutil import which

    return which("sqlite3") is not None


def _origin(stub: StubEmulator):  # type: ignore[no-untyped-def]
    route = CODEC.resolve("stub-provider", stub.base_url, "stub-1")
    from thoughtline.messages import Origin

    return Origin(api="stub", provider=route.provider, host=route.host, model="stub-1")
