"""Calibration that cannot be fooled (issue 28 item 1): the prompt size is every input-token
count the API reports, and a sample far from the raw estimate is ignored, so a provider that
reports too small a prompt can no longer switch automatic compaction off."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import replace

import pytest
from compaction_support import run

from thoughtline import Session, config
from thoughtline.codecs.anthropic.decode import usage_of as anthropic_usage
from thoughtline.codecs.bedrock.decode import usage_of as bedrock_usage
from thoughtline.compaction import AutoCompaction, CompactionSettings, session_estimator
from thoughtline.estimate import CALIBRATION, calibration_of
from thoughtline.events import Done, Event, Notice
from thoughtline.messages import Message, Origin, Text, Usage, user
from thoughtline.store.base import Store
from thoughtline.testing.anthropic_emulator import AnthropicEmulator

KEY_ENV = "TL_CMP_CALIBRATION_KEY"
ORIGIN = Origin(api="openai-chat", provider="openrouter", host="openrouter.ai",
                model="openai/gpt-5")


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicEmulator]:
    monkeypatch.setenv(KEY_ENV, "sk-ant-fake-calibration")
    with AnthropicEmulator() as emulator:
        yield emulator


def test_the_prompt_size_is_the_sum_of_every_input_token_count() -> None:
    # Anthropic: input_tokens leaves out cache reads and writes (Anthropic prompt-caching docs).
    usage = anthropic_usage({"input_tokens": 12, "cache_read_input_tokens": 4000,
                             "cache_creation_input_tokens": 300, "output_tokens": 9})
    assert usage.input_tokens == 12 and usage.cached_tokens == 4000
    assert usage.prompt_size == 4312
    assert bedrock_usage({"inputTokens": 7, "cacheReadInputTokens": 900,
                          "cacheWriteInputTokens": 50, "outputTokens": 3}).prompt_size == 957
    # APIs whose input count already includes the cached tokens report it as it is
    assert Usage(input_tokens=800, cached_tokens=700).prompt_size == 800


async def _fixed_summary(prompt: Sequence[Message]) -> tuple[str, str | None]:
    return "the story so far: " + "s" * 200, "stop"


def _constant_run(session: Session, pending: Message, index: int, reported: int,
                  priced: list[int]) -> Callable[[], AsyncIterator[Event]]:
    """A relay without a network: store the turn and report ``reported`` prompt tokens."""
    async def events() -> AsyncIterator[Event]:
        priced.append(session_estimator(session).price([*session.history, pending]))
        answer = Message(role="assistant", origin=ORIGIN,
                         parts=(Text(text=f"answer {index}: " + "a" * 900),))
        session.store.append(session.id, [pending, answer])
        session.reload()
        yield Done(message=answer, usage=Usage(input_tokens=reported), finish_reason="stop")
    return events


def test_a_relay_reporting_a_constant_prompt_size_still_compacts(store: Store) -> None:
    # The measurement: 14 turns of ~450 tokens in a 6,000-token window at threshold
    # 0.5, every answer reporting prompt_tokens: 100. Before, nothing ever compacted.
    window = 6000
    auto = AutoCompaction(CompactionSettings(windows={"openrouter": window}, threshold=0.5,
                                             keep=4), summarize=_fixed_summary)
    priced: list[int] = []
    notices: list[str] = []

    async def scenario() -> Session:
        session = Session.create(store, config.provider("openrouter", model="openai/gpt-5"))
        for i in range(14):
            pending = user(f"turn {i}: " + "q" * 900)
            async for event in auto.around(session, pending,
                                           _constant_run(session, pending, i, 100, priced)):
                if isinstance(event, Notice):
                    notices.append(event.text)
        return session

    session = run(scenario())
    assert auto.compactions >= 1
    assert max(priced) <= window * 0.5 + 600  # never far over the threshold, let alone the window
    assert auto.ignored_samples >= 10  # every report past the floor was implausible
    ignored = [n for n in notices if "outside 0.25–4.0× the estimate" in n]
    assert len(ignored) == 1 and "reported a prompt of 100 tokens" in ignored[0]
    assert calibration_of(session.config, session.route).samples == 0
    assert CALIBRATION not in session.config.settings


def test_a_session_whose_provider_reports_only_uncached_input_compacts_automatically(
        anthropic: AnthropicEmulator, store: Store) -> None:
    anthropic.cache_prompts()  # input_tokens: the last message only; the rest is cache_read
    provider = replace(config.presets()["anthropic"], base_url=anthropic.base_url,
                       model="claude-opus-4-5", key_env=KEY_ENV)
    auto = AutoCompaction(CompactionSettings(windows={"anthropic": 8000}, threshold=0.5,
                                             keep=4))

    async def scenario() -> Session:
        session = Session.create(store, provider, system="Be brief.")
        for i in range(14):
            await auto.send(session, f"Note {i}: " + "remember this detail. " * 50)
        await session.aclose()
        return session

    start = len(anthropic.received)
    session = run(scenario())
    sent = anthropic.received[start:]
    assert all(r.status == 200 for r in sent)
    answers = [r for r in sent if "Note 13" in r.raw.decode()]
    assert answers  # the conversation went on to the end
    assert auto.compactions >= 1 and auto.ignored_samples == 0
    # every input count summed: the learned ratio is about what the emulator counts (bytes / 4)
    learned = calibration_of(session.config, session.route)
    assert learned.samples >= 5 and 0.8 < learned.ratio < 1.25
