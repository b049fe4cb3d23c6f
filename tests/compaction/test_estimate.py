"""The one estimator: the pricing rule, what it prices (the route's wire view), calibration from
reported prompt tokens, and the known context windows."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from compaction_support import TOOLS, deepseek, run, tool_loop

from thoughtline import Session, config
from thoughtline.codecs import registry
from thoughtline.compaction import AutoCompaction, CompactionSettings, load_settings
from thoughtline.errors import ConfigError
from thoughtline.estimate import (
    CALIBRATION,
    PLAUSIBLE,
    SAMPLE_FLOOR,
    Calibration,
    Estimator,
    body_tokens,
    calibration_key,
    calibration_of,
    context_window,
    observe,
    text_tokens,
)
from thoughtline.messages import Message, Origin, Reasoning, Text, user
from thoughtline.modelconfig import ModelConfig
from thoughtline.testing import ChatEmulator


def test_ascii_is_bytes_over_four_and_cjk_one_per_code_point() -> None:
    assert text_tokens("") == 0
    assert text_tokens("abcd") == 1 and text_tokens("abcde") == 2
    assert text_tokens("思考过程") == 4  # 12 UTF-8 bytes, but ~1 token per code point
    assert text_tokens("ひらがなカタカナ한국어") == 11
    assert text_tokens("思考 abcd") == 2 + 2  # two CJK, then " abcd" = 5 bytes -> 2
    assert text_tokens("é" * 4) == 2  # non-CJK non-ASCII: its UTF-8 bytes / 4


def _openrouter_turn(model: str) -> Message:
    origin = Origin(api="openai-chat", provider="openrouter", host="openrouter.ai", model=model)
    item = {"type": "reasoning.encrypted", "data": "E" * 8000, "format": "openai-responses-v1",
            "index": 0}
    return Message(role="assistant", origin=origin, parts=(
        Reasoning(kind="encrypted", data=item["data"], origin=origin,
                  native={"openrouter": item}),
        Text(text="done")))


def _estimator(provider: str, model: str) -> Estimator:
    prov = config.provider(provider, model=model)
    codec = registry.codec(prov.api)
    route = registry.resolve_on(codec, prov.route_id, prov.base_url, model, echo=prov.echo)
    return Estimator.for_config(codec, route, ModelConfig(provider=prov))


def test_opaque_carriers_cost_exactly_what_the_route_receives() -> None:
    history = [user("hi"), _openrouter_turn("openai/gpt-5"), user("and?")]
    carrying = _estimator("openrouter", "openai/gpt-5")
    encoded = carrying.codec.encode_request(history, carrying.plan, carrying.spec)
    assert b"E" * 8000 in orjson.dumps(encoded.body)  # the route reads the encrypted item
    assert carrying.price(history) == body_tokens(encoded.body) >= 2000
    strict = _estimator("mistral", "magistral-medium-latest")
    assert b"E" * 8000 not in orjson.dumps(
        strict.codec.encode_request(history, strict.plan, strict.spec).body)
    assert strict.price(history) < 100  # never sent there, so it costs nothing there


def test_observe_keeps_a_running_mean_and_ignores_missing_usage() -> None:
    assert observe(Calibration(), raw=1000, reported=0) is None
    first = observe(Calibration(), raw=1000, reported=800)
    assert first == Calibration(ratio=0.8, samples=1)
    second = observe(first, raw=1000, reported=600)
    assert second is not None and second.samples == 2 and second.ratio == pytest.approx(0.7)


def test_observe_ignores_implausible_samples_and_requests_too_small_to_judge() -> None:
    low, high = PLAUSIBLE
    known = Calibration(ratio=0.9, samples=3)
    assert observe(known, raw=4000, reported=100) is None  # a relay answering a constant
    assert observe(known, raw=4000, reported=int(4000 * high) + 4) is None
    assert observe(known, raw=4000, reported=int(4000 * low)) is not None  # the bounds count
    assert observe(known, raw=4000, reported=int(4000 * high)) is not None
    # under the floor a hidden system prompt dominates: 398 reported for 97 estimated is real
    assert observe(known, raw=SAMPLE_FLOOR - 1, reported=SAMPLE_FLOOR - 1) is None
    assert observe(known, raw=SAMPLE_FLOOR, reported=SAMPLE_FLOOR) is not None


def test_a_session_calibrates_from_the_prompt_tokens_the_provider_reports(
        emu: ChatEmulator, store: object) -> None:
    # The emulator reports prompt_tokens = request bytes // 4; the estimator counts a CJK code
    # point as one token (3 bytes), so on a CJK conversation the learned ratio must fall below 1
    # and bring the estimate to what the provider says.
    async def scenario() -> tuple[Session, int]:
        session = Session.create(store, deepseek(emu), system="用中文回答。" * 40)  # type: ignore[arg-type]
        auto = AutoCompaction(CompactionSettings())  # no window known: no compacting
        for i in range(3):
            await auto.send(session, "请解释一下这个问题的思考过程" * 30 + str(i))
        await session.aclose()
        return session, len(emu.received)

    session, _ = run(scenario())
    last = emu.received[-1]
    reported = len(last.raw) // 4
    raw = body_tokens(last.body)
    assert raw > reported * 1.1  # uncalibrated, the CJK estimate overshoots
    stored = calibration_of(session.config, session.route)
    assert stored.samples == 3 and 0.5 < stored.ratio < 0.95
    key = calibration_key(session.route)
    assert session.config.settings[CALIBRATION][key]["samples"] == 3
    # stored with the session, and read back by a fresh process's estimator
    resumed = Session.resume(store, session.id)  # type: ignore[arg-type]
    again = Estimator.for_config(resumed.codec, resumed.route, resumed.config)
    assert abs(again.scale(raw) - reported) < abs(raw - reported) / 2


def test_calibration_merges_with_what_other_writers_stored(emu: ChatEmulator,
                                                          store: object) -> None:
    async def scenario() -> Session:
        # a system prompt long enough that both requests are over the calibration floor
        session = Session.create(store, deepseek(emu), tools=TOOLS,  # type: ignore[arg-type]
                                 system="Answer thoroughly. " * 150)
        session.remember({"anthropic": {"kept": "yes"}})
        await tool_loop(session, 0, auto=AutoCompaction(CompactionSettings()))
        await session.aclose()
        return session

    session = run(scenario())
    settings = session.store.get_session(session.id).model_config["settings"]
    assert settings["anthropic"] == {"kept": "yes"}
    assert settings[CALIBRATION][calibration_key(session.route)]["samples"] == 2


def test_known_windows_and_overrides(tmp_path: Path) -> None:
    assert context_window("deepseek-reasoner") == 131072
    assert context_window("anthropic/claude-sonnet-4.5") == 200000
    assert context_window("gemini-3-pro-preview") == 1048576
    assert context_window("some-local-model") is None
    assert context_window("deepseek-reasoner", 9000) == 9000
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        '[compaction]\nthreshold = 0.7\nkeep = 4\nsummarizer = "deepseek/deepseek-chat"\n\n'
        '[providers.mine]\npreset = "deepseek"\ncontext_window = 32000\n')
    settings = load_settings(home)
    assert (settings.threshold, settings.keep, settings.summarizer) == (
        0.7, 4, "deepseek/deepseek-chat")
    mine = config.provider("mine", config.load_config(home))
    assert settings.window(mine) == 32000
    assert settings.window(config.provider("deepseek")) == 131072
    assert load_settings(tmp_path / "nowhere") == CompactionSettings()


@pytest.mark.parametrize("text", ["[compaction]\nthreshold = 1.5\n",
                                  "[compaction]\nsummarizer = \"just-a-model\"\n",
                                  "[providers.x]\ncontext_window = \"big\"\n"])
def test_bad_compaction_settings_are_config_errors(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError):
        load_settings(tmp_path)
