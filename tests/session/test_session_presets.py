"""Provider presets and ``config.toml``: every Chat Completions id exists and routes as documented;
named providers work end to end; ``--base-url`` moves a provider without changing its id.

Expected carriers and must-echo families are written here from the providers' public docs
(api-docs.deepseek.com thinking mode, platform.kimi.ai, platform.xiaomimimo.com,
openrouter.ai reasoning tokens), not read from the route table.
Where a setting changes what is sent (``echo``), it is verified on a request the deepseek emulator
received, using a stored assistant turn that has no reasoning of its own (imported history).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from session_support import run

from thoughtline import (
    ConfigError,
    Message,
    Origin,
    Session,
    ThoughtlineError,
    ToolCall,
    ToolResult,
    TurnOptions,
    UsageError,
    config,
    open_store,
)
from thoughtline.messages import user
from thoughtline.testing import ChatEmulator, Received
from thoughtline.transport import HttpTransport

RC, R, RD = "reasoning_content", "reasoning", "reasoning_details"
# docs/cli.md, Chat Completions preset ids.
CHAT_COMPLETIONS_IDS = (
    "deepseek", "openrouter", "kilocode", "ai-gateway", "nous", "novita", "minimax", "fireworks",
    "mistral", "groq", "cerebras", "sambanova", "kimi", "xiaomi", "zai", "dashscope", "openai",
    "xai", "gemini-openai", "copilot", "ollama", "ollama-cloud", "lmstudio", "vllm", "custom",
)
LOCAL_SERVERS = {"ollama", "lmstudio", "vllm"}  # run on the user's machine: no key needed
# What each preset's route reads, from the providers' docs.
PRESET_CARRIERS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("mistral", "groq", "sambanova"), frozenset()),  # row 1
    "cerebras": frozenset({"reasoning"}),  # recorded: reads reasoning, rejects RC
    "fireworks": frozenset({RC}),  # row 2
    **dict.fromkeys(("openrouter", "kilocode", "ai-gateway", "nous"), frozenset({RC, R, RD})),
    **dict.fromkeys(("novita", "minimax"), frozenset({RC, RD})),  # row 4
    **dict.fromkeys(("ollama", "ollama-cloud", "lmstudio", "vllm"), frozenset({RC, R})),  # row 5
    **dict.fromkeys(("deepseek", "kimi", "xiaomi", "zai", "dashscope", "openai", "xai",
                     "gemini-openai"), frozenset({RC})),  # the de-facto standard
    "copilot": frozenset(),  # Copilot's own fields only
}
# Must-echo families: by provider id, or (deepseek, mimo) by a model id containing the family name;
# never where the route does not read reasoning_content.
MUST_ECHO_IDS = {"deepseek", "kimi", "xiaomi"}
MUST_ECHO_MODELS = ("deepseek", "mimo")
# The presets' key variables (config/presets.toml ``key_env``; docs/cli.md and docs/providers.md
# show two of them in use).
DOCUMENTED_KEY_VARIABLES = {"deepseek": "DEEPSEEK_API_KEY", "openrouter": "OPENROUTER_API_KEY",
                            "gemini-openai": "GEMINI_API_KEY"}
IMPORTED_CALL = "call_imported_0001"


# --- presets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider_id", CHAT_COMPLETIONS_IDS)
def test_every_chat_completions_preset_exists(provider_id: str) -> None:
    prov = config.provider(provider_id)
    assert prov.id == provider_id and prov.api == "openai-chat"
    if provider_id == "custom":  # the user brings the URL (and usually the model)
        assert prov.base_url == "" and prov.key_env
        return
    assert prov.model, "no default model"
    if provider_id in LOCAL_SERVERS:
        assert prov.base_url.startswith("http://localhost:")
    else:
        assert prov.base_url.startswith("https://"), prov.base_url
        assert prov.key_env and prov.key_env.isupper() and prov.key_env.endswith(
            ("_API_KEY", "_TOKEN")), prov.key_env
    if provider_id in DOCUMENTED_KEY_VARIABLES:
        assert prov.key_env == DOCUMENTED_KEY_VARIABLES[provider_id]


@pytest.fixture(scope="module")
def scratch_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    store = open_store(None, tmp_path_factory.mktemp("presets"))
    yield store
    store.close()


@pytest.fixture(scope="module")
def idle_transport() -> Any:
    """Never sends anything here; shared because building an httpx client costs ~0.1 s."""
    transport = HttpTransport()
    yield transport
    run(transport.aclose())


@pytest.mark.parametrize("provider_id", sorted(PRESET_CARRIERS))
def test_each_preset_routes_as_documented_and_base_url_keeps_the_route(
        scratch_store: Any, idle_transport: HttpTransport, provider_id: str) -> None:
    preset = config.provider(provider_id)
    moved = config.provider(provider_id, base_url="http://127.0.0.1:9/v1")
    assert moved.id == provider_id and moved.model == preset.model
    assert moved.key_env == preset.key_env
    hosted = Session.create(scratch_store, preset, transport=idle_transport).route
    local = Session.create(scratch_store, moved, transport=idle_transport).route
    assert hosted.profile.carriers == PRESET_CARRIERS[provider_id]
    echo_family = provider_id in MUST_ECHO_IDS or any(
        family in preset.model.lower() for family in MUST_ECHO_MODELS)
    assert hosted.profile.must_echo == (echo_family and RC in PRESET_CARRIERS[provider_id])
    # --base-url changes where requests go, never which route rules apply.
    lp = local.profile
    assert (local.row, lp.carriers, lp.must_echo, lp.native, dict(lp.body_extras)) \
        == (hosted.row, hosted.profile.carriers, hosted.profile.must_echo, hosted.profile.native,
            dict(hosted.profile.body_extras))
    assert local.provider == provider_id and local.host == "127.0.0.1"


def test_custom_without_a_base_url_says_how_to_fix_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = open_store(None, tmp_path)
        transport = HttpTransport()
        try:
            session = Session.create(store, config.provider("custom", model="m"),
                                     transport=transport)
            with pytest.raises(UsageError, match="base URL"):
                await session.send("hello")
            assert store.load_history(session.id).messages == ()
        finally:
            await transport.aclose()
            store.close()

    run(scenario())


def test_unknown_provider_lists_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[providers.my-gateway]\nbase_url = "http://x"\n')
    cfg = config.load_config(tmp_path)
    with pytest.raises(UsageError) as caught:
        config.provider("no-such-provider", cfg)
    assert "deepseek" in str(caught.value) and "my-gateway" in str(caught.value)


# --- config.toml --------------------------------------------------------------------------------


def _write_config(home: Path, emu: ChatEmulator) -> config.Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'''
[providers.ds-never]
base_url = "{emu.base_url}"
api_key_env = "TL_SESSION_TEST_KEY"
model = "deepseek-v4-pro"
echo = "never"

[providers.gw-always]
base_url = "{emu.base_url}"
api_key_env = "TL_SESSION_TEST_KEY"
model = "generic-model"
echo = "always"

[providers.gw-auto]
base_url = "{emu.base_url}"
api_key_env = "TL_SESSION_TEST_KEY"
model = "generic-model"

[providers.Work]
preset = "deepseek"
base_url = "{emu.base_url}"
api_key_env = "TL_WORK_KEY"
''')
    return config.load_config(home)


def test_named_providers_read_their_fields(pool: Any, tmp_path: Path) -> None:
    cfg = _write_config(tmp_path, pool.get("deepseek"))
    never = config.provider("ds-never", cfg)
    assert (never.id, never.model, never.key_env, never.echo) == (
        "ds-never", "deepseek-v4-pro", "TL_SESSION_TEST_KEY", "never")
    work = config.provider("work", cfg)  # names are case-insensitive
    assert work.id == "work" and work.model == config.provider("deepseek").model
    assert work.key_env == "TL_WORK_KEY" and work.base_url == pool.get("deepseek").base_url
    overridden = config.provider("gw-auto", cfg, model="other-model", key_env="OTHER_KEY")
    assert (overridden.id, overridden.model, overridden.key_env) == (
        "gw-auto", "other-model", "OTHER_KEY")


@pytest.mark.parametrize(("text", "named"), [
    ('[providers.odd]\nbase_url = "http://x"\necho = "sometimes"\n', "echo"),
    ('[providers]\nodd = "http://x"\n', "providers.odd"),
    ('[providers.odd]\npreset = "deepsek"\n', "deepsek"),
    ('[providers.odd]\nbase_url = 8080\n', "base_url"),
    ('defaults = "deepseek"\n', "defaults"),
], ids=["echo", "not-a-table", "unknown-preset", "not-a-string", "defaults"])
def test_a_malformed_config_toml_is_a_config_error(tmp_path: Path, text: str,
                                                   named: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError, match=named):
        config.load_config(tmp_path)


async def _first_request(home: Path, prov: config.ProviderConfig,
                         emu: ChatEmulator) -> list[Received]:
    """Imported history (an assistant tool call with no reasoning), then the tool result."""
    store = open_store(None, home)
    transport = HttpTransport()
    try:
        session = Session.create(store, prov, transport=transport)
        imported = Message(role="assistant", parts=(ToolCall(
            id=IMPORTED_CALL, name="weather", arguments='{"city": "Oslo"}'),),
            origin=Origin(api="openai-chat", provider="elsewhere", model="unknown"))
        store.append(session.id, [user("Weather in Oslo?"), imported])
        resumed = Session.resume(store, session.id, transport=transport)
        start = len(emu.received)
        # What the learn-once fallback makes of a refusal is not this test's business.
        with contextlib.suppress(ThoughtlineError):
            await resumed.send([ToolResult(call_id=IMPORTED_CALL, content="cloudy")],
                               TurnOptions(stream=False))
        return emu.received[start:]
    finally:
        await transport.aclose()
        store.close()


def _imported_turn(request: Received) -> dict[str, Any]:
    (turn,) = [m for m in request.body["messages"] if m.get("role") == "assistant"]
    return turn


@pytest.mark.parametrize(("name", "pad", "first_status"), [
    ("deepseek", True, 200),  # the preset: must-echo family by provider id
    ("work", True, 200),  # a named provider on the deepseek preset: family by model id
    ("gw-always", True, 200),  # echo = "always" opts an unknown gateway in
    ("gw-auto", False, 400),  # ... which otherwise sends nothing, and DeepSeek refuses that
    ("ds-never", False, 400),  # echo = "never" opts a DeepSeek model out
])
def test_echo_setting_decides_the_pad(pool: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      name: str, pad: bool, first_status: int) -> None:
    monkeypatch.setenv("TL_SESSION_TEST_KEY", "sk-test-config-toml")
    monkeypatch.setenv("TL_WORK_KEY", "sk-test-work")
    emu = pool.get("deepseek")
    cfg = _write_config(tmp_path, emu)
    prov = (config.provider(name, cfg, base_url=emu.base_url) if name == "deepseek"
            else config.provider(name, cfg))
    sent = run(_first_request(tmp_path, prov, emu))
    first = sent[0]
    assert first.status == first_status, first.raw[-300:]
    turn = _imported_turn(first)
    if pad:
        assert turn.get(RC) == " "  # the must-echo placeholder: a space, never ""
    else:
        assert RC not in turn
    assert R not in turn  # a pad is not reasoning: never in `reasoning`
    expected_key = {"deepseek": "sk-fake-session-test-deepseek_api_key",
                    "work": "sk-test-work"}.get(name, "sk-test-config-toml")
    assert first.headers.get("authorization") == f"Bearer {expected_key}"
