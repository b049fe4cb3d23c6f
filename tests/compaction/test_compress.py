"""``compress``: retained turns go back byte for byte (checked at the emulator, as bytes), after a
plain compaction and after salvage; shadowed checkpoints go; generations keep the past; per-model
rules (visible-text summaries for Claude, settings after compaction) come from data and hooks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import orjson
from compaction_support import TOOLS, accepted, assistant_wire, deepseek, run, tool_loop

from thoughtline import Session
from thoughtline.codecs import registry
from thoughtline.codecs.openai_chat.codec import OpenAIChat
from thoughtline.compaction import (
    PRUNED,
    CompactionRules,
    compact_history,
    compress,
    is_checkpoint,
    rules_for,
)
from thoughtline.estimate import Estimator
from thoughtline.messages import Message, Text, dumps
from thoughtline.modelconfig import ModelConfig
from thoughtline.store.base import Store
from thoughtline.testing import ChatEmulator

SUMMARY_MARK = "Summarize this conversation"


def _summary_requests(emu: ChatEmulator, start: int) -> list[Any]:
    return [r for r in accepted(emu, start)
            if SUMMARY_MARK in str(r.body["messages"][-1].get("content"))]


def _retained_assistants(session: Session) -> list[Message]:
    return [m for m in session.history if m.role == "assistant"]


def _assert_tail_replayed_byte_identical(emu: ChatEmulator, before: dict[str, bytes],
                                         session: Session) -> None:
    """Every assistant turn the compacted session kept reached the emulator with exactly the
    bytes it had on the last request before compaction (reasoning_content included).

    ``before`` is that request's assistant turns; its own answer came after it, so the request
    after compaction carries exactly one assistant turn ``before`` cannot know."""
    after = assistant_wire(accepted(emu)[-1].body)
    kept = _retained_assistants(session)[:-1]  # the last one answered the request just sent
    assert len(after) == len(kept) >= 2, "the compacted session kept too little to check"
    assert len(set(after) - set(before)) == 1
    for key in set(after) & set(before):
        assert after[key] == before[key], f"{key}: replayed differently after compaction"
        assert orjson.loads(after[key]).get("reasoning_content"), f"{key}: reasoning missing"


async def _loops(session: Session, start: int, count: int, **kwargs: Any) -> None:
    for i in range(start, start + count):
        await tool_loop(session, i, **kwargs)


def test_compress_keeps_every_retained_turn_byte_identical_on_the_wire(
        emu: ChatEmulator, store: Store) -> None:
    async def scenario() -> tuple[Session, Any, dict[str, bytes], list[bytes]]:
        session = Session.create(store, deepseek(emu), tools=TOOLS, system="Be brief.")
        await _loops(session, 0, 10)
        await session.send("status?")
        before = assistant_wire(accepted(emu)[-1].body)
        stored = [dumps(m) for m in session.history]
        result = await compress(session, keep=9)
        await session.send("and now?")
        await session.aclose()
        return session, result, before, stored

    start = len(emu.received)
    session, result, before, stored = run(scenario())
    assert result.compacted and result.turns_before == 43
    assert result.turns_after == 1 + 1 + 9  # system, checkpoint, the kept tail
    assert result.tokens_after < result.tokens_before
    assert all(r.status == 200 for r in emu.received[start:])  # must-echo route: all accepted
    _assert_tail_replayed_byte_identical(emu, before, session)
    history = session.history
    assert history[0].role == "system" and is_checkpoint(history[1])
    assert [dumps(m) for m in history[2:11]] == stored[-9:]  # stored verbatim too


def test_salvage_prunes_old_tool_results_and_never_touches_reasoning(
        emu: ChatEmulator, store: Store) -> None:
    async def scenario() -> tuple[Session, Any, dict[str, bytes]]:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        await _loops(session, 0, 6, result_size=4000)
        await session.send("status?")
        before = assistant_wire(accepted(emu)[-1].body)
        # a budget the kept tail (three exchanges of 4,000-character results) cannot meet
        result = await compress(session, keep=14, budget=1500)
        await session.send("and now?")
        await session.aclose()
        return session, result, before

    session, result, before = run(scenario())
    assert result.compacted and "pruned old tool results" in result.salvaged
    _assert_tail_replayed_byte_identical(emu, before, session)
    contents = [r.content for m in session.history for r in m.tool_results]
    assert len(contents) == 3
    assert contents[0] == PRUNED.format(n=4000)
    assert all(len(c) == 4000 for c in contents[1:])  # the newest two are kept


def test_only_the_shadowed_checkpoint_goes_and_its_summary_is_carried(
        emu: ChatEmulator, store: Store) -> None:
    async def scenario() -> tuple[Session, Any, Any]:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        await _loops(session, 0, 6)
        first = await compress(session, keep=4)
        await _loops(session, 6, 6)
        second = await compress(session, keep=4)
        await session.aclose()
        return session, first, second

    start = len(emu.received)
    session, first, second = run(scenario())
    assert first.compacted and second.compacted and second.dropped_checkpoints == 1
    checkpoints = [m for m in session.history if is_checkpoint(m)]
    assert len(checkpoints) == 1 and session.history[0] is checkpoints[0]
    prompts = _summary_requests(emu, start)
    assert len(prompts) == 2
    first_summary = str(prompts[0].body["messages"][-1]["content"])
    assert "[summary of what came before]" not in first_summary
    assert "[summary of what came before]" in str(prompts[1].body["messages"][-1]["content"])


def test_nothing_to_gain_leaves_the_session_alone_and_says_why(emu: ChatEmulator,
                                                               store: Store) -> None:
    async def scenario() -> tuple[Session, Any, list[bytes]]:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        await _loops(session, 0, 2)
        stored = [dumps(m) for m in session.history]
        result = await compress(session, keep=8)
        await session.aclose()
        return session, result, stored

    session, result, stored = run(scenario())
    assert not result.compacted and "nothing to compact" in result.reason
    assert result.to_json() == {"session": session.id, "compacted": False, "turns_before": 8,
                                "turns_after": 8, "tokens_before": result.tokens_before,
                                "tokens_after": result.tokens_before, "reason": result.reason}
    assert [g.number for g in store.list_generations(session.id)] == [0]
    assert [dumps(m.message) for m in store.load_history(session.id).messages] == stored


def test_generations_keep_the_past_and_branches_verdicts_fingerprints_carry_over(
        emu: ChatEmulator, store: Store) -> None:
    async def scenario() -> tuple[Session, Session, list[bytes]]:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        await _loops(session, 0, 5)
        store.update_model_config(session.id, lambda raw: {
            **raw, "fingerprints": ["fp:rejected-once"],
            "verdicts": [{"provider": "deepseek", "host": "127.0.0.1",
                          "model": "deepseek-reasoner", "drop": [], "pad": True,
                          "reason": "learned earlier"}]})
        session = Session.resume(store, session.id)
        branch = session.branch(at=12, title="side")
        stored = [dumps(m) for m in session.history]
        assert (await compress(session, keep=4)).compacted
        await session.aclose()
        return session, branch, stored

    session, branch, stored = run(scenario())
    resumed = Session.resume(store, session.id)
    assert resumed.fingerprints == {"fp:rejected-once"} and len(resumed.verdicts) == 1
    assert len(resumed.history) == 5 and is_checkpoint(resumed.history[0])
    generations = store.list_generations(session.id)
    assert [(g.number, g.turns, g.current) for g in generations] == [(0, 20, False),
                                                                    (1, 5, True)]
    assert generations[0].note["ended_by"] == "compaction"
    # the branch still sees exactly what it inherited, and still names its parent
    kept = store.load_history(branch.id).messages
    assert [dumps(m.message) for m in kept] == stored[:12]
    assert store.get_session(branch.id).parent_id == session.id
    # the archived generation is the old history, message for message
    old_ids = [mid for _, mid in store.generation_ids(session.id, 0)]  # type: ignore[attr-defined]
    assert len(old_ids) == 20
    assert store.restore_generation(session.id, 0) == 2
    restored = store.load_history(session.id).messages
    assert [dumps(m.message) for m in restored] == stored and [m.id for m in restored] == old_ids


# --- per-model rules --------------------------------------------------------------------------


class _Capture:
    def __init__(self) -> None:
        self.prompts: list[Sequence[Message]] = []

    async def __call__(self, prompt: Sequence[Message]) -> tuple[str, str | None]:
        self.prompts.append(prompt)
        return "the summary", "stop"


def _route_rules(provider: str, model: str) -> CompactionRules:
    from thoughtline import config

    prov = config.provider(provider, model=model)
    codec = registry.codec(prov.api)
    return rules_for(codec, codec.resolve(prov.route_id, prov.base_url, model))


def test_a_claude_summarizer_gets_visible_text_never_transcribed_thinking(
        emu: ChatEmulator, store: Store) -> None:
    async def scenario() -> tuple[list[Message], Estimator]:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        await _loops(session, 0, 3)
        await session.aclose()
        est = Estimator.for_config(session.codec, session.route, session.config)
        return list(session.history), est

    history, estimator = run(scenario())
    thoughts = [m.reasoning_text() for m in history if m.role == "assistant"]
    assert all(thoughts)
    claude = _route_rules("openrouter", "anthropic/claude-sonnet-4.5")
    assert not claude.summarize_reasoning  # config/models.toml: reasoning_extraction refusals
    for rules, shown in ((claude, False), (_route_rules("deepseek", "deepseek-reasoner"), True)):
        capture = _Capture()
        outcome = run(compact_history(history, estimator=estimator, summarize=capture, keep=2,
                                      summary_rules=rules))
        assert outcome.compacted
        text = capture.prompts[0][-1].text
        assert "Question 0" in text  # the visible conversation is there
        assert any(t in text for t in thoughts) is shown


def test_a_refusing_summarizer_compacts_nothing(emu: ChatEmulator, store: Store) -> None:
    async def refuse(prompt: Sequence[Message]) -> tuple[str, str | None]:
        return "", "refusal"

    async def scenario() -> tuple[Session, Any]:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        await _loops(session, 0, 3)
        result = await compress(session, keep=2, summarize=refuse)
        await session.aclose()
        return session, result

    session, result = run(scenario())
    assert not result.compacted and "refused" in result.reason
    assert len(store.load_history(session.id).messages) == 12


class _BoundThinkingChat(OpenAIChat):
    """A test-only API id whose codec asks for settings after a compaction, through the optional
    ``compaction_rules`` hook (what an Anthropic codec does for preserved-thinking models)."""

    api = "bound-chat"

    def compaction_rules(self, route: Any, rules: CompactionRules) -> CompactionRules:
        return replace(rules, after_compaction={
            self.api: {"prefix_mismatch_behavior": "drop_block"}})


def test_a_codec_hook_stores_its_api_settings_after_compaction(emu: ChatEmulator,
                                                               store: Store) -> None:
    registry.register("bound-chat", _BoundThinkingChat())
    try:
        async def scenario() -> tuple[Session, Any]:
            session = Session.create(store, replace(deepseek(emu), api="bound-chat"),
                                     tools=TOOLS)
            await _loops(session, 0, 3)
            assert session.config.api_settings("bound-chat") == {}
            result = await compress(session, keep=2)
            await session.send("after")  # still accepted by the route
            await session.aclose()
            return session, result

        session, result = run(scenario())
    finally:
        registry.unregister("bound-chat")
    assert result.compacted
    assert result.settings == {"bound-chat": {"prefix_mismatch_behavior": "drop_block"}}
    assert "prefix_mismatch_behavior=drop_block" in result.describe()
    stored = ModelConfig.from_json(store.get_session(session.id).model_config)
    assert stored.api_settings("bound-chat") == {"prefix_mismatch_behavior": "drop_block"}


def test_a_session_with_a_damaged_payload_still_compacts(emu: ChatEmulator, store: Store,
                                                         home: Any) -> None:
    import sqlite3

    from thoughtline.store import encode_message

    async def first() -> Session:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        await _loops(session, 0, 4)
        assert (await compress(session, keep=4)).compacted
        await _loops(session, 4, 4)
        await session.aclose()
        return session

    session = run(first())
    # the last stored message carries a native record (an opaque payload), then goes bad
    noted = Message(role="user", parts=(Text(text="a note"),), native={"thoughtline": {"n": 1}})
    store.append(session.id, [noted])
    [payload] = encode_message(noted).payloads
    conn = sqlite3.connect(home / "state.db", isolation_level=None)
    conn.execute("UPDATE payloads SET data = ? WHERE digest = ?", (b"{}", payload))
    conn.close()

    async def again() -> Any:
        resumed = Session.resume(store, session.id)
        # decoding the history (compaction needs it) reports the damage; it is never sent
        assert not resumed.history[-1].native and resumed.problems
        result = await compress(resumed, keep=4)
        await resumed.aclose()
        return result

    result = run(again())
    assert result.compacted and result.turns_before == 22
