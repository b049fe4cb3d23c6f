"""``gateway.toml`` and ``thoughtline serve`` flags: parsing, validation, refusals by name."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from thoughtline.errors import ConfigError, UsageError
from thoughtline.gateway.config import DEFAULT_MAX_BODY, load, parse
from thoughtline.gateway.upstreams import missing_keys

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
allow_any_model = true
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
    # Issue 23 item 11: an API nothing speaks is refused at load, not as a 500 per request.
    ('[[upstream]]\nname="a"\nprovider="deepseek"\napi="nope"\n',
     "api 'nope' is not one thoughtline speaks; use one of: anthropic, bedrock, gemini"),
    ('[[upstream]]\nname="a"\nprovider="deepseek"\nread_timeout=0\n', "above 0"),
    ('[[upstream]]\nname="a"\nprovider="deepseek"\nfirst_byte_timeout="9"\n', "seconds"),
    ('[[upstream]]\nname="a"\nprovider="deepseek"\nmax_connections=0\n', "integer ≥ 1"),
    ('[[upstream]]\nname="a"\nprovider="deepseek"\nallow_any_model="yes"\n', "true or false"),
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


def test_listed_models_are_the_only_ones_passed_on_unless_any_is_allowed() -> None:
    # Issue 23 item 3: a client-chosen id ("../", "?", "#") never reaches an upstream that
    # lists its models.
    base = '[[upstream]]\nname = "g"\nprovider = "gemini"\nmodels = ["gemini-3-pro"]\n'
    listed = parse(tomllib.loads(base))
    assert listed.upstream_for("g/gemini-3-pro")[1] == "gemini-3-pro"
    for hostile in ("g/../../v1beta/files", "g/gemini-3-pro?x", "g/gemini-3-pro#", "x#y"):
        with pytest.raises(UsageError, match="allow_any_model = true"):
            listed.upstream_for(hostile)
    anything = parse(tomllib.loads(base + "allow_any_model = true\n"))
    assert anything.upstream_for("g/gemini-3-flash")[1] == "gemini-3-flash"
    unlisted = parse(tomllib.loads('[[upstream]]\nname = "g"\nprovider = "gemini"\n'))
    assert unlisted.upstream_for("g/gemini-3-flash")[1] == "gemini-3-flash"


def test_a_gateway_toml_that_is_not_utf8_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_bytes(EXAMPLE.encode("utf-8").replace(b'"ds"', b'"d\xe9s"'))
    with pytest.raises(ConfigError, match="not UTF-8"):
        load(config)
    result = _serve(tmp_path, "serve", "--config", str(config))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: {config}: not UTF-8 text (undecodable byte at offset "
        f"{EXAMPLE.index('ds') + 1}); save it as UTF-8"]


def test_a_port_in_use_is_one_line_and_exit_2_and_an_unset_key_is_warned(
        tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(EXAMPLE)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        keyed = _serve(tmp_path, "serve", "--config", str(config), "--port", str(port),
                       env={"DEEPSEEK_API_KEY": "sk-set"})
        unset = _serve(tmp_path, "serve", "--config", str(config), "--port", str(port),
                       env={"DEEPSEEK_API_KEY": ""})
    assert keyed.returncode == 2 and unset.returncode == 2
    said = f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert len(keyed.stderr.splitlines()) == 1 and keyed.stderr.startswith(said)
    assert "Traceback" not in keyed.stderr + unset.stderr
    assert unset.stdout.splitlines()[0] == (  # with the banners: stderr is JSON lines only
        "warning: upstream 'ds': DEEPSEEK_API_KEY is not set, so requests to it are sent "
        "without a key")
    assert len(unset.stderr.splitlines()) == 1 and unset.stderr.startswith(said)


def test_only_upstreams_that_need_a_key_are_warned_about() -> None:
    config = parse(tomllib.loads(
        EXAMPLE + '[[upstream]]\nname = "aws"\nprovider = "bedrock"\nregion = "us-east-1"\n'
        'api_key_env = "UNUSED_BY_SIGV4"\n'))
    assert missing_keys(config, {}) == [("ds", "DEEPSEEK_API_KEY")]
    assert missing_keys(config, {"DEEPSEEK_API_KEY": "sk-x"}) == []


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
                                   '"x" = "ds/"', '"x" = "g/gemini-3-flash"'])
def test_an_alias_must_name_a_configured_upstream_and_model(table: str) -> None:
    listed = '\n[[upstream]]\nname = "g"\nprovider = "gemini"\nmodels = ["gemini-3-pro"]\n'
    with pytest.raises(ConfigError, match=r"aliases\.x"):
        parse(tomllib.loads(EXAMPLE + listed + f"\n[aliases]\n{table}\n"))
