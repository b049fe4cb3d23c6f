"""``thoughtline routes`` through the real entry point (docs/cli.md), in a throwaway home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(sys.executable).with_name("thoughtline")
ENTRY = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "thoughtline.cli.main"]
JSON_KEYS = ["route", "api", "carriers", "must_echo", "body_extras", "native"]
RC, R, RD = "reasoning_content", "reasoning", "reasoning_details"


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THOUGHTLINE_")}
    env.update(THOUGHTLINE_HOME=str(home), NO_COLOR="1")
    return subprocess.run([*ENTRY, *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def routes_json(home: Path, *args: str) -> dict[str, object]:
    result = run(home, "routes", *args, "--json")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1  # exactly one JSON object
    out = json.loads(lines[0])
    assert list(out) == JSON_KEYS
    return out


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_groq_is_strict(home: Path) -> None:
    out = routes_json(home, "--provider", "groq")
    assert out["carriers"] == []
    assert out["must_echo"] is False
    assert out["api"] == "openai-chat"


def test_deepseek_must_echo(home: Path) -> None:
    out = routes_json(home, "--provider", "deepseek")
    assert out["must_echo"] is True
    assert out["carriers"] == [RC]


def test_openrouter_reads_all_three_carriers_sorted(home: Path) -> None:
    out = routes_json(home, "--provider", "openrouter")
    assert out["carriers"] == sorted([RD, RC, R]) == [R, RC, RD]
    assert out["native"] == []


@pytest.mark.parametrize(("provider", "extras", "native"), [
    ("zai", {"thinking": {"type": "enabled", "clear_thinking": False}}, []),
    ("gemini-openai", {}, ["google"]),
    ("copilot", {}, ["copilot"]),
    ("mistral", {}, []),
])
def test_body_extras_and_native(home: Path, provider: str, extras: dict[str, object],
                                native: list[str]) -> None:
    out = routes_json(home, "--provider", provider)
    assert out["body_extras"] == extras
    assert out["native"] == native


def test_base_url_override_keeps_the_provider_id(home: Path) -> None:
    # deepseek pointed at a loopback server is still the deepseek route: route rules keyed on the
    # provider id still apply.
    out = routes_json(home, "--provider", "deepseek", "--base-url", "http://127.0.0.1:9/v1")
    assert out["must_echo"] is True
    assert out["carriers"] == [RC]
    out = routes_json(home, "--provider", "custom", "--base-url", "http://127.0.0.1:9/v1")
    assert out["carriers"] == [R, RC]
    out = routes_json(home, "--provider", "custom", "--base-url",
                      "https://api.groq.com/openai/v1")
    assert out["carriers"] == []


def test_model_override(home: Path) -> None:
    out = routes_json(home, "--provider", "mistral", "--model", "deepseek-r1")
    assert out == {"route": out["route"], "api": "openai-chat", "carriers": [],
                   "must_echo": False, "body_extras": {}, "native": []}


def test_named_provider_with_echo_never(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text(
        '[providers.quiet-deepseek]\npreset = "deepseek"\necho = "never"\n', "utf-8")
    out = routes_json(home, "--provider", "quiet-deepseek")
    assert out["must_echo"] is False
    assert out["carriers"] == [RC]
    # --home overrides THOUGHTLINE_HOME for one command
    other = home.parent / "elsewhere"
    result = run(other, "--home", str(home), "routes", "--provider", "quiet-deepseek", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["must_echo"] is False


def test_words_for_groq(home: Path) -> None:
    result = run(home, "routes", "--provider", "groq")
    assert result.returncode == 0, result.stderr
    assert "not even the placeholder" in result.stdout
    assert "groq" in result.stdout and "api.groq.com" in result.stdout


def test_words_for_deepseek_explain_the_pad(home: Path) -> None:
    result = run(home, "routes", "--provider", "deepseek")
    assert result.returncode == 0, result.stderr
    assert "must-echo" in result.stdout and '" "' in result.stdout


def test_unknown_provider_is_a_usage_error(home: Path) -> None:
    result = run(home, "routes", "--provider", "no-such-provider")
    assert result.returncode == 2
    assert "unknown provider" in result.stderr and "no-such-provider" in result.stderr
    assert "deepseek" in result.stderr  # it says which providers exist
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""


def test_named_provider_built_on_a_preset_routes_as_the_preset(home: Path) -> None:
    # A proxy to DeepSeek named "ds-proxy" keeps DeepSeek's rules (must-echo, RC only), also on a
    # loopback URL; without a preset the same URL is just an unlisted local endpoint.
    home.mkdir(parents=True)
    (home / "config.toml").write_text(
        '[providers.ds-proxy]\npreset = "deepseek"\nbase_url = "http://127.0.0.1:9/v1"\n\n'
        '[providers.plain]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n')
    proxy = routes_json(home, "--provider", "ds-proxy")
    assert (proxy["carriers"], proxy["must_echo"]) == ([RC], True)
    plain = routes_json(home, "--provider", "plain")
    assert (plain["carriers"], plain["must_echo"]) == ([R, RC], False)


def test_demo_describes_the_route_its_chats_use(home: Path) -> None:
    """Issue 31 item 5: ``routes --provider demo`` said route ``default`` while demo chats went
    out on ``local-endpoint`` (they talk to an emulator on loopback)."""
    chat = run(home, "chat", "--provider", "demo", "-p", "which route?", "--json")
    assert chat.returncode == 0, chat.stderr
    logs = run(home, "logs", "--json")
    [record] = [json.loads(line) for line in logs.stdout.splitlines()]
    out = routes_json(home, "--provider", "demo")
    assert out["route"] == record["route"]
    assert (out["api"], record["api"]) == ("openai-chat", "openai-chat")
    sent = run(home, "routes", "--provider", "demo", "--base-url",
               f"http://{record['host']}:9/v1", "--json")
    assert json.loads(sent.stdout)["carriers"] == out["carriers"]  # what the chat's URL gets
    text = run(home, "routes", "--provider", "demo").stdout
    assert f"route: {record['route']} " in text
    assert "(no base URL)" not in text


@pytest.mark.parametrize(("provider", "path"),
                         [("bedrock", ""), ("bedrock-anthropic", "/anthropic")])
def test_bedrock_shows_its_region_templated_default_url(home: Path, provider: str,
                                                        path: str) -> None:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("THOUGHTLINE_", "AWS_"))}
    base.update(THOUGHTLINE_HOME=str(home), NO_COLOR="1")
    unset = subprocess.run([*ENTRY, "routes", "--provider", provider], capture_output=True,
                           text=True, env=base, timeout=60, check=False)
    assert unset.returncode == 0, unset.stderr
    first = unset.stdout.splitlines()[0]
    assert f"@ https://bedrock-runtime.{{region}}.amazonaws.com{path} (the default)" in first
    assert "(no base URL)" not in unset.stdout
    if provider == "bedrock":  # Converse reads the region from the AWS environment too
        regional = subprocess.run([*ENTRY, "routes", "--provider", provider],
                                  capture_output=True, text=True, timeout=60, check=False,
                                  env={**base, "AWS_REGION": "eu-west-3"})
        assert "@ https://bedrock-runtime.eu-west-3.amazonaws.com (the default)" in \
            regional.stdout.splitlines()[0]
