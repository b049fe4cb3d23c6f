"""``ModelConfig.after(lesson)``: what one rejected request taught, merged into a config — the
one expression the turn engine's retry, the session and the gateway all use."""

from __future__ import annotations

from thoughtline import config
from thoughtline.codecs.base import Lesson
from thoughtline.modelconfig import ModelConfig
from thoughtline.verdicts import Verdict


def _config() -> ModelConfig:
    return ModelConfig(provider=config.provider("openrouter", model="openai/gpt-5"),
                       fingerprints=frozenset({"old"}),
                       settings={"anthropic": {"kept": "yes"}})


def test_a_lesson_with_a_verdict_adds_it_with_its_fingerprints_and_settings() -> None:
    verdict = Verdict(provider="openrouter", host="openrouter.ai", model="openai/gpt-5",
                      drop=frozenset({"reasoning_content"}))
    lesson = Lesson(notice="n", verdict=verdict, fingerprints=frozenset({"fp"}),
                    settings={"anthropic": {"mode": "x"}})
    after = _config().after(lesson)
    assert after.verdicts == (verdict,)
    assert after.fingerprints == frozenset({"old", "fp"})
    assert after.settings == {"anthropic": {"kept": "yes", "mode": "x"}}
    assert after == _config().learned(verdicts=[verdict], fingerprints={"fp"},
                                      settings={"anthropic": {"mode": "x"}})


def test_a_lesson_without_a_verdict_adds_no_verdict() -> None:
    after = _config().after(Lesson(notice="n", fingerprints=frozenset({"fp"})))
    assert after.verdicts == () and after.fingerprints == frozenset({"old", "fp"})
    assert after.settings == {"anthropic": {"kept": "yes"}}
