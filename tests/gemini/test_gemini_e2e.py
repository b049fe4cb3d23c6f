"""Gemini end to end: ``Session`` and the CLI against the loopback Gemini emulator.

Done-when of issue 12: a multi-turn tool-calling conversation on a Gemini 3 model and a plain text
conversation are accepted on every request, before and after ``chat -r`` in a fresh process, with
every signature byte-identical on the part it came on. The emulator is the witness: it verifies
each signature against the call or text it was issued for and records what it verified, and its
records of the responses it sent are compared with the requests it got, as bytes.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from thoughtline import Session, ToolResult, ToolSpec, TurnOptions, config, open_store
from thoughtline.messages import dumps
from thoughtline.testing.gemini_emulator import GeminiEmulator
from thoughtline.testing.server import Received

SIG = "thoughtSignature"
MODEL = "gemini-3-pro-preview"
KEY_ENV = {"GEMINI_API_KEY": "fake-gemini-key-e2e", "VERTEX_ACCESS_TOKEN": "fake-vertex-token"}
SRC = Path(__file__).resolve().parents[2] / "src"
TOOLS = (
    ToolSpec(name="weather", description="Current weather for a city",
             parameters={"type": "object", "properties": {"city": {"type": "string"}},
                         "required": ["city"]}),
    ToolSpec(name="clock", description="Local time in a city",
             parameters={"type": "object", "properties": {"city": {"type": "string"}}}),
)


@pytest.fixture(scope="module")
def emu() -> Iterator[GeminiEmulator]:
    with GeminiEmulator() as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEY_ENV.items():
        monkeypatch.setenv(name, value)


def signed_parts(body: Any) -> list[tuple[bytes, bytes]]:
    """``(the part without its signature, the signature)`` for every signed part, as bytes."""
    out = []
    for content in body.get("contents", ()):
        for part in content["parts"]:
            if SIG in part:
                rest = {k: v for k, v in part.items() if k != SIG}
                out.append((orjson.dumps(rest, option=orjson.OPT_SORT_KEYS),
                            orjson.dumps(part[SIG])))
    return out


def issued_parts(answer: Any) -> list[tuple[bytes, bytes]]:
    """What one answer signed. A stream is read as the whole it describes: its text fragments
    joined, signed by the signature on its trailing empty part (thought-signatures page)."""
    chunks = answer if isinstance(answer, list) else [answer]
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]
             if p.get("thought") is not True]
    joined: list[dict[str, Any]] = [p for p in parts if "functionCall" in p]
    text = "".join(p.get("text", "") for p in parts if "functionCall" not in p)
    signature = next((p[SIG] for p in parts if "functionCall" not in p and SIG in p), None)
    if signature is not None:
        joined.append({"text": text, SIG: signature})
    return signed_parts({"contents": [{"parts": joined}]})


def assert_every_signature_returned(emu: GeminiEmulator, requests: list[Received]) -> None:
    """Each request carries, byte for byte, every signature issued on the answers before it,
    on a part equal to the one it was issued on."""
    assert all(r.status == 200 for r in requests), [r.status for r in requests]
    expected: list[tuple[bytes, bytes]] = []
    for record in requests:
        assert signed_parts(record.body) == expected, "a replayed signature moved or changed"
        expected = expected + issued_parts(answer_to(emu, record))


def answer_to(emu: GeminiEmulator, record: Received) -> Any:
    return emu.answers[next(i for i, r in enumerate(emu.received) if r is record)]


async def converse(session: Session, turns: list[str | list[str]], *, stream: bool) -> None:
    for turn in turns:
        done = await session.send(turn if isinstance(turn, str) else turn[0],
                                  TurnOptions(stream=stream))
        while done.message.tool_calls:
            results = [ToolResult(call_id=c.id, content=f"{c.name}: fine ({c.arguments})")
                       for c in done.message.tool_calls]
            done = await session.send(results, TurnOptions(stream=stream))
        assert done.message.text


def cli(home: Path, *args: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THOUGHTLINE_")}
    env.update(KEY_ENV, THOUGHTLINE_HOME=str(home), PYTHONPATH=str(SRC))
    result = subprocess.run([sys.executable, "-m", "thoughtline.cli.main", *args],
                            capture_output=True, text=True, env=env, timeout=120, check=False,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_tool_conversation_and_text_conversation_before_and_after_resume(
        tmp_path: Path, emu: GeminiEmulator, stream: bool) -> None:
    provider = config.provider("gemini", base_url=emu.base_url, model=MODEL)
    store = open_store(None, tmp_path)
    start = len(emu.received)
    tools = Session.create(store, provider, tools=TOOLS, title=f"tools-{stream}")
    text = Session.create(store, provider, title=f"text-{stream}")

    async def run() -> None:
        await converse(tools, ["weather in Rome?", "weather and time in Oslo, both please",
                               "chain: weather then time in Lima"], stream=stream)
        await converse(text, ["hello there", "and a second question", "a third"],
                       stream=stream)
        await tools.aclose()
        await text.aclose()

    asyncio.run(run())
    mine = emu.received[start:]
    tool_requests = [r for r in mine if r.body.get("tools")]
    text_requests = [r for r in mine if not r.body.get("tools")]
    assert len(tool_requests) == 2 + 2 + 3 and len(text_requests) == 3
    # Parallel calls: only the first of the step is signed on the way back, as it came.
    parallel = [c for r in tool_requests for c in r.body["contents"] if c["role"] == "model"
                and sum("functionCall" in p for p in c["parts"]) == 2]
    assert parallel and all([SIG in p for p in c["parts"] if "functionCall" in p] == [True, False]
                            for c in parallel)
    for group in (tool_requests, text_requests):
        assert_every_signature_returned(emu, group)
    assert all(not check.ignored for check in emu.checks[-len(mine):])

    # A fresh process resumes each session with `chat -r`: still accepted, every signature kept.
    stored = {s.id: [dumps(m) for m in s.history] for s in (tools, text)}
    for session, prompt in ((tools, "weather in Paris?"), (text, "one more")):
        before = len(emu.received)
        out = cli(tmp_path, "chat", "-r", session.id, "-p", prompt, "--json",
                  *(() if stream else ("--no-stream",)))
        assert out["session"] == session.id
        (resumed,) = emu.received[before:]
        assert resumed.status == 200
        previous = [r for r in mine if r.body.get("tools") == resumed.body.get("tools")][-1]
        carried = signed_parts(resumed.body)
        assert carried == signed_parts(previous.body) + issued_parts(answer_to(emu, previous))
        assert emu.checks[-1].verified == [orjson.loads(s) for _, s in carried]
    reopened = open_store(None, tmp_path)
    for session_id, messages in stored.items():
        history = [dumps(m.message) for m in reopened.load_history(session_id).messages]
        assert history[:len(messages)] == messages  # stored turns never rewritten
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "requests.jsonl" for p in written)  # the CLI logged its requests
    for path in written:  # state.db (and its WAL), logs: names of key variables, never keys
        assert not any(key.encode() in path.read_bytes() for key in KEY_ENV.values()), path


def test_vertex_preset_on_the_vertex_path(tmp_path: Path, emu: GeminiEmulator) -> None:
    base = emu.vertex_base_url("proj-1", "us-central1")
    provider = config.provider("vertex-gemini", base_url=base, model="gemini-3-flash-preview")
    session = Session.create(open_store(None, tmp_path), provider, tools=TOOLS)
    start = len(emu.received)

    async def run() -> None:
        await converse(session, ["weather in Rome?", "and in Oslo?"], stream=True)
        await session.aclose()

    asyncio.run(run())
    requests = emu.received[start:]
    assert all(r.status == 200 for r in requests) and len(requests) == 4
    assert all(r.headers["authorization"] == "Bearer fake-vertex-token" for r in requests)
    assert all("/projects/proj-1/locations/us-central1/publishers/google/models/" in r.path
               for r in requests)
    assert len(emu.checks[-1].verified) == 3  # two calls and one answer text, on their parts


def test_signatures_stay_in_their_project(tmp_path: Path, emu: GeminiEmulator) -> None:
    from dataclasses import replace

    def vertex(project: str) -> Any:
        base = emu.vertex_base_url(project, "global")
        return replace(config.provider("vertex-gemini", base_url=base,
                                       model="gemini-3-flash-preview"), project=project)

    session = Session.create(open_store(None, tmp_path), vertex("proj-a"), tools=TOOLS)

    async def run() -> None:
        await converse(session, ["weather in Rome?"], stream=False)
        first = len(emu.received)
        await converse(session, ["and in Oslo?"], stream=False)
        same = emu.received[first]
        assert len(signed_parts(same.body)) == 2  # proj-a's call and answer, on their parts
        session.set_provider(vertex("proj-b"))
        moved = len(emu.received)
        await converse(session, ["and in Lima?"], stream=False)
        other = emu.received[moved]
        assert other.status == 200
        carried = [orjson.loads(s) for _, s in signed_parts(other.body)]
        assert set(carried) == {"skip_thought_signature_validator"}  # none of proj-a's
        await session.aclose()

    asyncio.run(run())


def test_an_interrupted_answer_is_kept_incomplete_and_replayed_without_signatures(
        tmp_path: Path) -> None:
    from thoughtline.errors import StreamInterrupted

    with GeminiEmulator() as emu:
        provider = config.provider("gemini", base_url=emu.base_url, model=MODEL)
        session = Session.create(open_store(None, tmp_path), provider, tools=TOOLS)

        async def run() -> None:
            await converse(session, ["weather in Rome?"], stream=True)
            emu.cut_stream_after(2)  # the thought and the signed call; no finishReason
            with pytest.raises(StreamInterrupted):
                await session.send("and in Oslo?", TurnOptions(stream=True))
            partial = session.history[-1]
            assert partial.incomplete and partial.tool_calls
            cut_signature = partial.tool_calls[0].native["gemini"][SIG]
            before = len(emu.received)
            await converse(session, ["try Oslo again"], stream=True)
            after = emu.received[before]
            assert after.status == 200 and cut_signature not in after.raw.decode()
            kept = [orjson.loads(s) for _, s in signed_parts(after.body)]
            assert len(kept) == 2 and all(s in emu.issued for s in kept)  # the whole turns
            await session.aclose()

        asyncio.run(run())
