"""A tool-calling conversation with signed and redacted thinking (an empty-text signed block
included) through ``Session`` against the Anthropic emulator, on the direct, Vertex, Foundry and
Bedrock-Messages routes; repairs of a rejected signature and of a changed system prompt on a
model that binds blocks (the issue's "Done when").
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from anthropic_support import (
    ROUTE,
    ROUTES,
    RouteCase,
    assistant_contents,
    collect,
    issued,
    new_session,
    notices,
    run,
    signatures,
    tool_conversation,
)

from thoughtline import Session, open_store
from thoughtline.codecs.anthropic import binding, part_fingerprint
from thoughtline.messages import Reasoning, system
from thoughtline.requestlog import RequestLog
from thoughtline.testing.anthropic_emulator import AnthropicEmulator

MODEL = "claude-opus-4-5"  # keeps every earlier turn's thinking: every block goes back


@pytest.mark.parametrize("case", ROUTES, ids=[c.name for c in ROUTES])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_every_block_goes_back_byte_for_byte_on_every_route(
        emu: AnthropicEmulator, tmp_path: Path, case: RouteCase, stream: bool) -> None:
    from thoughtline.turn import TurnOptions

    session = new_session(tmp_path, case.provider(emu, MODEL))
    mark, answered = len(emu.received), len(emu.answers)
    if not stream:
        original = session.stream
        session.stream = lambda turn, options=None: original(  # type: ignore[method-assign]
            turn, TurnOptions(stream=False))
    dones = run(tool_conversation(session))
    sent = emu.received[mark:]
    assert [r.status for r in sent] == [200, 200, 200, 200]  # no retries, nothing refused
    for index, request in enumerate(sent):
        assert assistant_contents(request) == issued(emu, answered, index)
    kinds = [(type(p).__name__, getattr(p, "kind", None), getattr(p, "text", None))
             for p in dones[1].message.parts]
    assert kinds[:2] == [("Reasoning", "signed", ""), ("Reasoning", "redacted", None)]
    first = sent[0]
    if case.name == "bedrock":
        assert first.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
        assert first.path == "/anthropic/v1/messages" and "anthropic-version" not in first.headers
    elif case.name == "vertex":
        verb = "streamRawPredict" if stream else "rawPredict"
        assert first.path == ("/v1/projects/test-project/locations/us-east5/publishers/"
                              f"anthropic/models/{MODEL}:{verb}")
        assert first.body["anthropic_version"] == "vertex-2023-10-16" and "model" not in first.body
        assert first.headers["authorization"] == "Bearer ya29.test-token"
    elif case.name == "foundry":
        assert first.headers["api-key"] == "foundry-test-key"
    else:
        assert first.headers["x-api-key"] == "sk-ant-test"
        assert first.headers["anthropic-version"] == "2023-06-01"


def test_a_resumed_session_sends_the_same_bytes(emu: AnthropicEmulator, tmp_path: Path) -> None:
    session = new_session(tmp_path, ROUTE["direct"].provider(emu, MODEL))
    run(tool_conversation(session))
    live, _ = session.build_request()
    resumed = Session.resume(open_store(None, tmp_path), session.id)
    again, _ = resumed.build_request()
    assert orjson.dumps(again) == orjson.dumps(live)
    assert [orjson.dumps(m) for m in resumed.history] == [orjson.dumps(m) for m in session.history]


def _forced_rejection(path: str) -> dict[str, object]:
    return {"type": "error", "error": {"type": "invalid_request_error",
                                       "message": f"{path}: Invalid `signature` in `thinking` "
                                                  "block"}}


def test_a_rejected_signature_is_repaired_with_one_retry_and_never_recurs(
        emu: AnthropicEmulator, tmp_path: Path) -> None:
    session = new_session(tmp_path, ROUTE["direct"].provider(emu, MODEL))
    first = run(tool_conversation(session))[0].message
    rejected = next(p for p in first.parts if isinstance(p, Reasoning))
    emu.fail_next(400, _forced_rejection("messages.1.content.0"))
    mark = len(emu.received)
    _, events = run(collect(session, "One more question"))
    retry = emu.received[mark:]
    assert [r.status for r in retry] == [400, 200]  # exactly one retry
    assert rejected.signature in signatures(retry[0])
    assert rejected.signature not in signatures(retry[1])
    assert len(signatures(retry[1])) == len(signatures(retry[0])) - 1  # everything else replays
    assert any("messages.1.content.0" in n for n in notices(events))
    assert part_fingerprint(rejected) in session.fingerprints
    # Resumed (a new Session from the store): never sent again, no second rejection needed.
    resumed = Session.resume(open_store(None, tmp_path), session.id)
    mark = len(emu.received)
    run(collect(resumed, "And another"))
    [later] = emu.received[mark:]
    assert later.status == 200 and rejected.signature not in signatures(later)


def emu_answer_text(emu: AnthropicEmulator, mark: int) -> bytes:
    """What the emulator answered the refused request (its record keeps the request only, so
    replay it: the emulator is deterministic)."""
    import httpx

    refused = emu.received[mark]
    return httpx.post(emu.base_url + refused.path, headers=refused.headers,
                      content=refused.raw).content


def _binding_session(tmp_path: Path, emu: AnthropicEmulator, **params: str) -> Session:
    provider = ROUTE["direct"].provider(emu, "claude-fable-5-1")
    return new_session(tmp_path, provider, tools=(), system="Answer briefly. Today is 2026-09-01.",
                       params=dict(params))


def _with_changed_system(session: Session, log: RequestLog | None = None) -> Session:
    """The same stored session, its system prompt rebuilt (a new date): the prefix changed."""
    history = [system("Answer briefly. Today is 2026-09-02."), *session.history[1:]]
    return Session(store=session.store, record=session.record, history=history,
                   provider=session.provider, log=log)


def test_a_changed_system_prompt_with_drop_block_is_answered_and_the_drop_shown(
        emu: AnthropicEmulator, tmp_path: Path) -> None:
    session = _binding_session(tmp_path, emu, prefix_mismatch_behavior="drop_block")
    first, _ = run(collect(session, "Think about it, then say what 17*23 is."))
    block = first.message.parts[0]
    assert isinstance(block, Reasoning) and block.text == "" and block.signature
    log = RequestLog(tmp_path / "logs")
    edited = _with_changed_system(session, log)
    mark = len(emu.received)
    done, events = run(collect(edited, "And times two?"))
    [request] = emu.received[mark:]
    [record] = log.read()
    assert record["reports"] == [dict(r) for r in done.reports]  # in the request log
    assert request.status == 200
    assert request.body["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert "thinking-binding-controls-2026-08-01" in request.headers["anthropic-beta"]
    assert [dict(r) for r in done.reports] == [{"type": "thinking_dropped",
                                                "path": "messages.1.content.0",
                                                "reason": "prefix_binding_mismatch"}]
    assert any("dropped" in n and "messages.1.content.0" in n for n in notices(events))
    assert part_fingerprint(block) in edited.fingerprints
    mark = len(emu.received)
    run(collect(edited, "And plus one?"))
    [later] = emu.received[mark:]
    assert block.signature not in signatures(later)  # never resent after the reported drop
    assert later.body["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}


def test_a_changed_system_prompt_without_the_setting_leaves_the_stale_block_out(
        emu: AnthropicEmulator, tmp_path: Path) -> None:
    session = _binding_session(tmp_path, emu)
    first, _ = run(collect(session, "Think about it, then say what 17*23 is."))
    block = first.message.parts[0]
    assert binding.stamp_of(session.history[-1])  # stored with its request's prefix digest
    edited = _with_changed_system(session)
    mark = len(emu.received)
    done, _ = run(collect(edited, "And times two?"))
    [request] = emu.received[mark:]  # no 400: the block could only fail the prefix check
    assert request.status == 200 and block.signature not in signatures(request)
    assert done.message.text
    unchanged = Session.resume(open_store(None, tmp_path), session.id)
    assert orjson.dumps(unchanged.build_request()[0]["messages"][1]["content"][0]) == (
        orjson.dumps({"type": "thinking", "thinking": "", "signature": block.signature}))


def test_an_unstamped_turn_under_a_changed_prompt_learns_drop_block_in_one_retry(
        emu: AnthropicEmulator, tmp_path: Path) -> None:
    session = _binding_session(tmp_path, emu)
    run(collect(session, "Think about it, then say what 17*23 is."))
    edited = _with_changed_system(session)
    # A turn stored without a prefix stamp (an older thoughtline, an import): the API decides.
    history = [replace(m, native={}) if m.role == "assistant" else m for m in edited.history]
    edited = Session(store=edited.store, record=edited.record, history=history,
                     provider=edited.provider)
    mark = len(emu.received)
    done, events = run(collect(edited, "And times two?"))
    refused, accepted = emu.received[mark:]
    assert refused.status == 400 and accepted.status == 200
    assert b"bound to a different conversation" in emu_answer_text(emu, mark)
    assert "block_binding" not in refused.body.get("thinking", {})
    assert accepted.body["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert edited.config.api_settings("anthropic") == {"prefix_mismatch_behavior": "drop_block"}
    assert notices(events) and done.message.text


def test_configured_betas_are_merged_with_the_ones_the_model_needs(
        emu: AnthropicEmulator, tmp_path: Path) -> None:
    provider = replace(ROUTE["direct"].provider(emu, "claude-fable-5-1"),
                       headers={"anthropic-beta": "files-api-2025-04-14",
                                "anthropic-version": "2026-10-21"})
    session = new_session(tmp_path, provider, tools=(),
                          params={"prefix_mismatch_behavior": "drop_block"})
    mark = len(emu.received)
    run(collect(session, "hello"))
    [request] = emu.received[mark:]
    assert request.status == 200
    assert request.headers["anthropic-beta"] == (
        "files-api-2025-04-14,thinking-binding-controls-2026-08-01")
    assert request.headers["anthropic-version"] == "2026-10-21"  # the client's, passed through


def test_a_stream_cut_before_the_signature_is_stored_incomplete_and_never_sent_signed(
        emu: AnthropicEmulator, tmp_path: Path) -> None:
    from thoughtline.errors import ThoughtlineError

    session = new_session(tmp_path, ROUTE["direct"].provider(emu, MODEL), tools=())
    emu.cut_stream_after(5)  # message_start, block start, ping, two thinking deltas: no signature
    with pytest.raises(ThoughtlineError):
        run(collect(session, "Tell me something long."))
    partial = session.history[-1]
    assert partial.role == "assistant" and partial.incomplete
    [cut] = partial.reasoning
    assert not cut.complete and cut.signature is None and cut.text
    mark = len(emu.received)
    run(collect(session, "Try again, shorter."))
    [request] = emu.received[mark:]
    assert request.status == 200
    sent = [b for m in request.body["messages"] if m["role"] == "assistant" for b in m["content"]]
    assert all(b["type"] != "thinking" for b in sent)  # neither signed nor as text


def test_sessions_show_lists_what_the_provider_reported_dropping(
        emu: AnthropicEmulator, tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    session = _binding_session(tmp_path, emu, prefix_mismatch_behavior="drop_block")
    run(collect(session, "Think about it, then say what 17*23 is."))
    edited = _with_changed_system(session, RequestLog(tmp_path / "logs"))
    run(collect(edited, "And times two?"))
    command = [sys.executable, "-m", "thoughtline.cli.main", "--home", str(tmp_path),
               "sessions", "show", session.id]
    shown = json.loads(subprocess.run([*command, "--json"], capture_output=True, text=True,
                                      check=True).stdout)
    assert shown["provider_reports"] == [{"request": 1, "report": {
        "type": "thinking_dropped", "path": "messages.1.content.0",
        "reason": "prefix_binding_mismatch"}}]
    words = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert ("provider report (request 1): thinking_dropped at messages.1.content.0 "
            "(prefix_binding_mismatch)") in words
