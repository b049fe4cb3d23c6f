"""``gateway.toml`` and ``thoughtline serve`` flags: parsing, validation, refusals by name."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from thoughtline.errors import ConfigError, UsageError
from thoughtline.gateway.config import DEFAULT_MAX_BODY, parse

EXAMPLE = """
[server]
host = "127.0.0.1"
port = 8787
tokens_env = "THOUGHTLINE_GATEWAY_TOKENS"
max_body_bytes = 33554432

[[upstream]]
name = "ds"
provider = "deepseek"
base_url = "http://127.0.0.1:9001/v1"
api_key_env = "DEEPSEEK_API_KEY"

[[upstream]]
name = "local"
provider = "my-vllm"
base_url = "http://127.0.0.1:8000/v1"
models = ["qwen3", "gpt-oss"]
"""


def test_the_design_example_parses_and_routes_models_at_the_first_slash() -> None:
    config = parse(tomllib.loads(EXAMPLE))
    assert (config.host, config.port, config.max_body_bytes) == ("127.0.0.1", 8787,
                                                                 DEFAULT_MAX_BODY)
    upstream, model = config.upstream_for("ds/deepseek-v4-pro")
    provider = upstream.for_model(model)
    assert (provider.id, provider.model, provider.key_env, provider.base_url) == (
        "deepseek", "deepseek-v4-pro", "DEEPSEEK_API_KEY", "http://127.0.0.1:9001/v1")
    upstream, model = config.upstream_for("local/org/model-with-slash")
    assert (upstream.name, model) == ("local", "org/model-with-slash")
    assert upstream.provider.api == "openai-chat"
    with pytest.raises(UsageError, match="ds/<model>"):
        config.upstream_for("elsewhere/x")
    assert config.tokens({"THOUGHTLINE_GATEWAY_TOKENS": " a, b ,,a"}) == ("a", "b")


@pytest.mark.parametrize(("text", "wording"), [
    ("[server]\nport = 1\n", r"at least one \[\[upstream"),
    ('[server]\nprot = 1\n[[upstream]]\nname="a"\nprovider="deepseek"\n', "unknown key"),
    ('[[upstream]]\nname="a/b"\nprovider="deepseek"\n', "without '/'"),
    ('[[upstream]]\nname="a"\nprovider="nowhere"\n', "needs base_url"),
    ('[[upstream]]\nname="a"\nprovider="deepseek"\n[[upstream]]\nname="a"\n'
     'provider="deepseek"\n', "two upstreams"),
    ('[server]\nport = "80"\n[[upstream]]\nname="a"\nprovider="deepseek"\n', "integer"),
])
def test_config_mistakes_are_named(text: str, wording: str) -> None:
    with pytest.raises(ConfigError, match=wording):
        parse(tomllib.loads(text))


def _serve(home: Path, *args: str, env: dict[str, str] | None = None,
           ) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", "from thoughtline.cli.main import main; main()",
            "--home", str(home), *args]
    environ = {k: v for k, v in os.environ.items() if k != "THOUGHTLINE_GATEWAY_TOKENS"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          env={**environ, **(env or {})})


def test_serve_refuses_a_public_bind_without_tokens_and_a_missing_config(
        tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(EXAMPLE)
    public = _serve(tmp_path, "serve", "--config", str(config), "--host", "0.0.0.0")
    assert public.returncode == 2
    assert "refusing to listen on 0.0.0.0" in public.stderr
    assert "THOUGHTLINE_GATEWAY_TOKENS" in public.stderr
    empty = tmp_path / "empty-home"
    missing = _serve(empty, "serve")
    assert missing.returncode == 2
    assert f"no gateway config at {empty / 'gateway.toml'}" in missing.stderr
    listed = _serve(tmp_path, "--help")
    assert "serve" in listed.stdout


def test_aliases_map_client_model_names_to_upstream_models() -> None:
    config = parse(tomllib.loads(EXAMPLE + '\n[aliases]\n"claude-opus-5-5" = "ds/deepseek-v4-pro"\n'
                                 '"*" = "local/qwen3"\n'))
    assert config.aliases["claude-opus-5-5"] == "ds/deepseek-v4-pro"
    upstream, model = config.upstream_for("claude-opus-5-5")
    assert (upstream.name, model) == ("ds", "deepseek-v4-pro")
    upstream, model = config.upstream_for("claude-haiku-5-5")  # any other name
    assert (upstream.name, model) == ("local", "qwen3")
    upstream, model = config.upstream_for("local/gpt-oss")  # upstream/model still wins
    assert (upstream.name, model) == ("local", "gpt-oss")
    without = parse(tomllib.loads(EXAMPLE + '\n[aliases]\n"sonnet" = "ds/deepseek-v4-pro"\n'))
    with pytest.raises(UsageError, match="sonnet"):  # the error lists the aliases too
        without.upstream_for("claude-opus-5-5")


@pytest.mark.parametrize("table", ['"x" = "nowhere/model"', '"x" = "ds"', '"x" = 3',
                                   '"x" = "ds/"'])
def test_an_alias_must_name_a_configured_upstream_and_model(table: str) -> None:
    with pytest.raises(ConfigError, match=r"aliases\.x"):
        parse(tomllib.loads(EXAMPLE + f"\n[aliases]\n{table}\n"))
