"""``thoughtline routes`` for the Bedrock preset, through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fallback_e2e.fallback_e2e_support import cli_ok


@pytest.mark.parametrize(("model", "policy", "carriers"), [
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "signed",
     ["reasoningText", "redactedContent", "signature"]),
    ("us.deepseek.r1-v1:0", "strip", []),
    ("global.openai.gpt-5.6-terra", "redacted-only", ["redactedContent"]),
    ("openai.gpt-oss-120b-1:0", "unsigned", ["reasoningText"]),
])
def test_routes_json_reports_the_model_policy(tmp_path: Path, model: str, policy: str,
                                              carriers: list[str]) -> None:
    out = cli_ok(tmp_path, "routes", "--provider", "bedrock", "--model", model, "--json").stdout
    data = json.loads(out)
    assert (data["route"], data["api"], data["policy"]) == ("bedrock", "bedrock", policy)
    assert data["carriers"] == carriers


def test_routes_in_words_and_with_an_emulator_base_url(tmp_path: Path) -> None:
    out = cli_ok(tmp_path, "routes", "--provider", "bedrock", "--base-url",
                 "http://127.0.0.1:9", "--model", "global.moonshotai.kimi-k3").stdout
    assert "route: bedrock" in out and "region-bound" in out
    assert "turns before the current tool loop carry: no reasoning" in out


def test_the_preset_says_plainly_what_is_missing(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from fallback_e2e.fallback_e2e_support import cli

    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws/config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws/credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    no_region = cli(tmp_path, "chat", "--provider", "bedrock", "-p", "hi")
    assert no_region.returncode == 2 and "AWS_REGION" in no_region.stderr
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    no_keys = cli(tmp_path, "chat", "--provider", "bedrock", "--base-url", "http://127.0.0.1:9",
                  "-p", "hi")
    assert no_keys.returncode == 2 and "no AWS credentials found" in no_keys.stderr
