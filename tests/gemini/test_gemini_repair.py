"""Gemini repairs through ``Session``: one rejection, one lesson persisted, one retry, one notice.

The emulator plays the documented refusals (gemini_rules): a signature it cannot verify is
"Corrupted thought signature.", a route that rejects the dummy answers the same way. What is
learned must survive in the session's stored model config, so a resumed session does not pay for
the lesson again.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from thoughtline import Session, ToolResult, ToolSpec, TurnOptions, config, open_store
from thoughtline.events import Done, Notice
from thoughtline.testing import ChatEmulator
from thoughtline.testing.gemini_emulator import GeminiEmulator

SIG = "thoughtSignature"
DUMMY = "skip_thought_signature_validator"
MODEL = "gemini-3-pro-preview"
TOOLS = (ToolSpec(name="weather", description="Current weather",
                  parameters={"type": "object", "properties": {"city": {"type": "string"}}}),)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "fake-gemini-key-repair")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-fake-deepseek-repair")


async def turn(session: Session, message: Any) -> tuple[Done, list[str]]:
    notices, done = [], None
    async for event in session.stream(message, TurnOptions(stream=True)):
        if isinstance(event, Notice):
            notices.append(event.text)
        elif isinstance(event, Done):
            done = event
    assert done is not None
    return done, notices


async def loop(session: Session, prompt: str) -> list[str]:
    done, notices = await turn(session, prompt)
    while done.message.tool_calls:
        done, more = await turn(session, [ToolResult(call_id=c.id, content="sunny")
                                          for c in done.message.tool_calls])
        notices += more
    return notices


def test_signatures_the_service_cannot_verify_are_fingerprinted_once(tmp_path: Path) -> None:
    asyncio.run(_fingerprinted(tmp_path))


async def _fingerprinted(tmp_path: Path) -> None:
    store = open_store(None, tmp_path)
    with GeminiEmulator(secret=b"the first service") as first:
        provider = config.provider("gemini", base_url=first.base_url, model=MODEL)
        session = Session.create(store, provider, tools=TOOLS)
        await loop(session, "weather in Rome?")
        issued = set(first.issued)
    # Another service (another secret) cannot verify them: it says so once, the retry goes
    # without those turns' thinking, and the next turn does not try them again.
    with GeminiEmulator(port=0, secret=b"another service") as second:
        session.set_provider(config.provider("gemini", base_url=second.base_url, model=MODEL))
        notices = await loop(session, "and in Oslo?")
        statuses = [r.status for r in second.received]
        assert statuses[:2] == [400, 200] and all(s == 200 for s in statuses[1:])
        assert second.received[0].body is not None
        refused = orjson.loads(second.received[0].raw)
        retry = orjson.loads(second.received[1].raw)
        sent_before = {p[SIG] for c in refused["contents"] for p in c["parts"] if SIG in p}
        assert sent_before and sent_before <= issued
        sent_after = [p.get(SIG) for c in retry["contents"] if c["role"] == "model"
                      for p in c["parts"] if "functionCall" in p]
        assert sent_after == [DUMMY]  # full context or none: no old signature, the dummy
        assert len(notices) == 1 and "rejected a replayed thought signature" in notices[0]
        assert len(session.fingerprints) == len(sent_before)
        await session.aclose()
    resumed = Session.resume(open_store(None, tmp_path), session.id)
    assert resumed.fingerprints == session.fingerprints


def test_a_route_that_rejects_the_dummy_learns_to_send_foreign_calls_as_text(
        tmp_path: Path) -> None:
    asyncio.run(_dummy_rejected(tmp_path))


async def _dummy_rejected(tmp_path: Path) -> None:
    store = open_store(None, tmp_path)
    with ChatEmulator("deepseek") as chat, GeminiEmulator(accept_dummy=False) as gemini:
        deepseek = config.provider("deepseek", base_url=chat.base_url, model="deepseek-reasoner")
        session = Session.create(store, deepseek, tools=TOOLS)
        await loop(session, "weather in Rome?")
        session.set_provider(config.provider("gemini", base_url=gemini.base_url, model=MODEL))
        notices = await loop(session, "and in Oslo?")
        first, second, *rest = gemini.received
        assert (first.status, second.status) == (400, 200) and all(r.status == 200 for r in rest)
        assert DUMMY in first.raw.decode()
        assert DUMMY not in second.raw.decode() and "functionResponse" not in second.raw.decode()
        retry = orjson.loads(second.raw)
        foreign = retry["contents"][1]["parts"]
        assert all("functionCall" not in p for p in foreign)  # the foreign call went as text
        assert any("weather" in p.get("text", "") for p in foreign)
        assert "sunny" in orjson.dumps(retry["contents"][2]).decode()  # its result, as text
        assert len(notices) == 1 and "plain text" in notices[0]
        (verdict,) = [v for v in session.verdicts if v.model == MODEL]
        assert verdict.drop == {"gemini.dummy_signature"}
        # Gemini's own calls in the same session still go back signed.
        last = orjson.loads(rest[-1].raw)
        own = [p for c in last["contents"] if c["role"] == "model" for p in c["parts"]
               if "functionCall" in p]
        assert own and SIG in own[0] and own[0][SIG] != DUMMY
        await session.aclose()
