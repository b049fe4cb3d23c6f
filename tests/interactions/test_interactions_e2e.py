"""The Gemini Interactions API end to end: ``Session`` against the loopback Interactions service.

Both modes (issue 29): stateless (``store: false``: the whole history, every thought step and its
signature byte for byte) and stateful (``previous_interaction_id`` per turn; a resume whose
history still matches continues the chain; a compaction, an edited history or an interaction the
server no longer has sends the whole history once and says so in the request log). The emulator
is the witness: it verifies every replayed signature and answers with how many thought steps the
model had in its context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from thoughtline import Session, ToolResult, ToolSpec, TurnOptions, config, open_store
from thoughtline.compaction.core import checkpoint
from thoughtline.messages import Message, Reasoning, Text, fingerprint
from thoughtline.requestlog import RequestLog
from thoughtline.testing.interactions_emulator import InteractionsEmulator

MODEL = "gemini-3-pro-preview"
KEY = "fake-gemini-key-interactions"
TOOLS = (ToolSpec(name="lookup", description="Look something up",
                  parameters={"type": "object", "properties": {"q": {"type": "string"}}}),)


@pytest.fixture()
def emu() -> Iterator[InteractionsEmulator]:
    with InteractionsEmulator() as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("VERTEX_ACCESS_TOKEN", "fake-vertex-token")


def _session(emu: InteractionsEmulator, tmp_path: Path, **kwargs: Any) -> Session:
    provider = config.provider("gemini-interactions", base_url=emu.base_url, model=MODEL)
    return Session.create(open_store(None, tmp_path), provider,
                          log=RequestLog(tmp_path / "logs"), **kwargs)


def _talk(session: Session, prompts: list[str], *, stream: bool) -> list[str]:
    async def run() -> list[str]:
        texts = []
        for prompt in prompts:
            done = await session.send(prompt, TurnOptions(stream=stream))
            while done.message.tool_calls:
                done = await session.send(
                    [ToolResult(call_id=c.id, content=f"found {c.arguments}")
                     for c in done.message.tool_calls], TurnOptions(stream=stream))
            texts.append(done.message.text)
        await session.aclose()
        return texts

    return asyncio.run(run())


def _thoughts(body: Any) -> list[dict[str, Any]]:
    return [s for s in body["input"] if s["type"] == "thought"]


def _issued(emu: InteractionsEmulator) -> list[tuple[str, str]]:
    """``(summary, signature)`` of every thought the service answered with, oldest first."""
    seen: list[tuple[str, str]] = []
    for steps in emu.stored.values():
        for step in steps:
            pair = (step.get("summary", [{}])[0].get("text", ""), step.get("signature", ""))
            if step["type"] == "thought" and pair not in seen:
                seen.append(pair)
    return seen


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_stateless_replays_every_thought_step_byte_for_byte(
        tmp_path: Path, emu: InteractionsEmulator, stream: bool) -> None:
    session = _session(emu, tmp_path, params={"store": False})
    texts = _talk(session, ["hello", "second", "third"], stream=stream)
    assert texts == ["reply 1 (thoughts in context: 0)", "reply 2 (thoughts in context: 1)",
                     "reply 3 (thoughts in context: 2)"]
    requests = emu.received
    assert [r.status for r in requests] == [200, 200, 200]
    assert all(r.body["store"] is False and "previous_interaction_id" not in r.body
               for r in requests)
    assert emu.stored == {}  # the server kept nothing
    # Every signature the answers carried comes back on its thought step, as the same bytes.
    signatures = [t.signature for m in session.history for t in m.reasoning]
    assert len(signatures) == 3
    last = requests[-1]
    assert [t["signature"] for t in _thoughts(last.body)] == signatures[:2]
    for signature in signatures[:2]:
        assert orjson.dumps(signature) in last.raw
    assert [t["summary"][0]["text"] for t in _thoughts(last.body)] == [
        "Considering request 1.", "Considering request 2."]
    assert [s["type"] for s in last.body["input"]] == [
        "user_input", "thought", "model_output", "user_input", "thought", "model_output",
        "user_input"]
    assert {r["state"] for r in RequestLog(tmp_path / "logs").read()} == {"stateless"}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_stateful_continues_the_server_chain_each_turn(
        tmp_path: Path, emu: InteractionsEmulator, stream: bool) -> None:
    session = _session(emu, tmp_path)
    texts = _talk(session, ["hello", "second", "third"], stream=stream)
    # The server had every earlier thought although only the new user step was sent.
    assert texts[-1] == "reply 3 (thoughts in context: 2)"
    first, second, third = emu.received
    assert first.body["store"] is True and "previous_interaction_id" not in first.body
    assert second.body["previous_interaction_id"] == "v1_emu0001"
    assert third.body["previous_interaction_id"] == "v1_emu0002"
    assert [s["type"] for s in third.body["input"]] == ["user_input"]
    log = list(RequestLog(tmp_path / "logs").read())
    assert [r["state"] for r in log] == ["new", "continued", "continued"]


def test_a_resumed_session_continues_its_chain(tmp_path: Path,
                                               emu: InteractionsEmulator) -> None:
    session = _session(emu, tmp_path)
    _talk(session, ["hello", "second"], stream=True)
    resumed = Session.resume(open_store(None, tmp_path), session.id,
                             log=RequestLog(tmp_path / "logs"))
    assert _talk(resumed, ["after resume"], stream=False) == [
        "reply 3 (thoughts in context: 2)"]
    assert emu.received[-1].body["previous_interaction_id"] == "v1_emu0002"


def test_a_branch_continues_from_its_own_last_answer(tmp_path: Path,
                                                     emu: InteractionsEmulator) -> None:
    session = _session(emu, tmp_path)
    _talk(session, ["hello", "second"], stream=False)
    branch = session.branch(at=2)
    assert _talk(branch, ["another way"], stream=True) == ["reply 3 (thoughts in context: 1)"]
    assert emu.received[-1].body["previous_interaction_id"] == "v1_emu0001"


def test_compaction_sends_the_whole_history_once_and_says_so(
        tmp_path: Path, emu: InteractionsEmulator) -> None:
    session = _session(emu, tmp_path)
    _talk(session, ["one", "two", "three"], stream=False)
    # What ``compaction.sessions.compress`` writes: a checkpoint for the head, the tail verbatim.
    # (Written directly: the estimator prices a stateful request by its bytes, the tail only,
    # so ``compress`` would judge this head too cheap to summarize; see the report.)
    session.store.replace_history(session.id, [checkpoint("we said one and two"),
                                               *session.history[-2:]])
    session.reload()
    assert len(session.history) == 3  # the checkpoint, "three" and its answer
    texts = _talk(session, ["four", "five"], stream=True)
    fallback, after = emu.received[-2:]
    assert "previous_interaction_id" not in fallback.body  # the whole (compacted) history
    assert [s["type"] for s in fallback.body["input"]] == [
        "user_input", "user_input", "thought", "model_output", "user_input"]
    assert fallback.status == 200 and fallback.body["store"] is True
    assert after.body["previous_interaction_id"] == "v1_emu0004"  # once: chained again
    assert texts == ["reply 4 (thoughts in context: 1)", "reply 5 (thoughts in context: 2)"]
    log = list(RequestLog(tmp_path / "logs").read())
    assert [r["state"] for r in log[-2:]] == ["fallback", "continued"]
    assert "compaction, branch or edit" in log[-2]["state_note"]


def test_an_interaction_the_server_lost_is_retried_once_with_the_whole_history(
        tmp_path: Path, emu: InteractionsEmulator) -> None:
    session = _session(emu, tmp_path)
    _talk(session, ["one", "two"], stream=False)
    emu.forget()  # retention ran out
    texts = _talk(session, ["three", "four"], stream=True)
    assert [r.status for r in emu.received] == [200, 200, 404, 200, 200]
    lost, retry, after = emu.received[2:]
    assert lost.body["previous_interaction_id"] == "v1_emu0002"
    assert "previous_interaction_id" not in retry.body
    assert len(_thoughts(retry.body)) == 2  # both earlier thoughts, with their signatures
    assert after.body["previous_interaction_id"] == "v1_emu0003"
    assert texts == ["reply 3 (thoughts in context: 2)", "reply 4 (thoughts in context: 3)"]


def test_a_corrupted_signature_is_repaired_once_and_never_resent(
        tmp_path: Path, emu: InteractionsEmulator) -> None:
    session = _session(emu, tmp_path, params={"store": False})
    _talk(session, ["one"], stream=False)
    good = session.history[1]
    forged = replace(good.reasoning[0], signature=good.reasoning[0].signature[:-8] + "AAAAAAA=")
    session._append([Message(role="user", parts=(Text(text="q"),)),
                     replace(good, parts=(forged, Text(text="forged")))])
    _talk(session, ["next", "and again"], stream=False)
    assert [r.status for r in emu.received] == [200, 400, 200, 200]
    rejected = orjson.loads(emu.received[1].raw)
    assert forged.signature in [t["signature"] for t in _thoughts(rejected)]
    for record in emu.received[2:]:
        assert forged.signature not in [t["signature"] for t in _thoughts(record.body)]
    assert fingerprint("thought.signature", forged.signature) in session.fingerprints
    assert session.history[3].reasoning[0].signature == forged.signature  # stored as it was


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_tool_call_and_its_result(tmp_path: Path, emu: InteractionsEmulator,
                                    stream: bool) -> None:
    session = _session(emu, tmp_path, tools=TOOLS)
    assert _talk(session, ["use the tool please"], stream=stream) == [
        "reply 2 (thoughts in context: 1)"]
    call = session.history[1].tool_calls[0]
    assert (call.id, call.name, orjson.loads(call.arguments)) == (
        "call_1", "lookup", {"q": "use the tool please"})
    second = emu.received[1].body
    assert second["previous_interaction_id"] == "v1_emu0001"
    assert second["input"] == [{"type": "function_result", "call_id": "call_1",
                                "result": f"found {call.arguments}"}]
    assert second["tools"][0] == {"type": "function", "name": "lookup",
                                  "description": "Look something up",
                                  "parameters": dict(TOOLS[0].parameters)}


def test_vertex_preset_on_the_vertex_path(tmp_path: Path, emu: InteractionsEmulator) -> None:
    provider = replace(config.provider("vertex-gemini-interactions",
                                       base_url=emu.vertex_base_url("proj-1", "us-central1"),
                                       model="gemini-3-flash-preview"), project="proj-1")
    session = Session.create(open_store(None, tmp_path), provider)
    _talk(session, ["hello", "again"], stream=True)
    assert [r.status for r in emu.received] == [200, 200]
    assert all(r.headers["authorization"] == "Bearer fake-vertex-token"
               and r.path == "/v1beta1/projects/proj-1/locations/us-central1/interactions"
               for r in emu.received)


def test_thoughts_from_another_tier_are_not_sent(tmp_path: Path,
                                                 emu: InteractionsEmulator) -> None:
    session = _session(emu, tmp_path, params={"store": False})
    _talk(session, ["one"], stream=False)
    lite = replace(session.provider, model="gemini-3-flash-lite-preview")
    other = Session.create(session.store, lite, params={"store": False})
    other._append(list(session.history))
    _talk(other, ["two"], stream=False)
    assert _thoughts(emu.received[-1].body) == []  # Flash-Lite cannot read Pro signatures
    assert emu.received[-1].status == 200


def test_no_key_reaches_the_store_or_the_log(tmp_path: Path, emu: InteractionsEmulator) -> None:
    session = _session(emu, tmp_path)
    _talk(session, ["hello", "again"], stream=True)
    assert emu.received[0].headers["x-goog-api-key"] == KEY
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert KEY.encode() not in path.read_bytes(), path


def test_a_stream_cut_before_its_signature_is_never_replayed_as_signed() -> None:
    from thoughtline.codecs.interactions.fold import StreamFold
    from thoughtline.messages import Origin

    fold = StreamFold(Origin(api="gemini-interactions", provider="p", model=MODEL), seed="s")
    fold.add_event("", {"event_type": "interaction.created", "interaction": {"id": "v1_x"}})
    fold.add_event("", {"event_type": "step.start", "index": 0, "step": {"type": "thought"}})
    fold.add_event("", {"event_type": "step.delta", "index": 0, "delta": {
        "type": "thought_summary", "content": {"type": "text", "text": "half"}}})
    done = fold.finish(complete=False)
    (part,) = done.message.parts
    assert isinstance(part, Reasoning) and part.signature is None and not part.complete
    assert not fold.finished and done.finish is None


def test_the_stateless_preset_keeps_nothing_on_the_server(tmp_path: Path,
                                                          emu: InteractionsEmulator) -> None:
    provider = config.provider("gemini-interactions-stateless", base_url=emu.base_url,
                               model=MODEL)
    session = Session.create(open_store(None, tmp_path), provider)
    assert session.route.row == "ai-studio-stateless"
    assert _talk(session, ["one", "two"], stream=True)[-1] == "reply 2 (thoughts in context: 1)"
    assert [r.body["store"] for r in emu.received] == [False, False]
    assert len(_thoughts(emu.received[-1].body)) == 1 and emu.stored == {}


def _cli(home: Path, *args: str) -> Any:
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("THOUGHTLINE_")}
    env.update(GEMINI_API_KEY=KEY, THOUGHTLINE_HOME=str(home),
               PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    result = subprocess.run([sys.executable, "-m", "thoughtline.cli.main", *args],
                            capture_output=True, text=True, env=env, timeout=120, check=False,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_chat_resumed_in_a_fresh_process_continues_the_chain(
        tmp_path: Path, emu: InteractionsEmulator) -> None:
    first = _cli(tmp_path, "chat", "--provider", "gemini-interactions", "--base-url",
                 emu.base_url, "--model", MODEL, "-p", "hello", "--json")
    _cli(tmp_path, "chat", "-r", first["session"], "-p", "again", "--json", "--no-stream")
    assert [r.status for r in emu.received] == [200, 200]
    assert emu.received[1].body["previous_interaction_id"] == "v1_emu0001"
    assert [s["type"] for s in emu.received[1].body["input"]] == ["user_input"]
    log = [orjson.loads(line) for line in
           (tmp_path / "logs" / "requests.jsonl").read_text().splitlines()]
    assert [r["state"] for r in log] == ["new", "continued"]
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert KEY.encode() not in path.read_bytes(), path
