"""`serve --help` describes gateway.toml (issue 31 item 3): the missing-config error points there,
so the help shows every table, and what it shows is a file the gateway loads as it is."""

from __future__ import annotations

import re
import tomllib

from click.testing import CliRunner

from thoughtline.cli.main import cli
from thoughtline.gateway.config import parse


def _shown_file(help_text: str) -> str:
    start = help_text.index("gateway.toml (")
    body = help_text[help_text.index("\n", start) + 1:help_text.index("The docs say more")]
    lines = [re.sub(r"\s+#.*$", "", line) for line in body.splitlines()]
    return "\n".join(line.strip() for line in lines)


def test_serve_help_describes_gateway_toml_and_its_example_loads() -> None:
    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0
    for table in ("[server]", "[[upstream]]", "[aliases]"):
        assert table in result.output
    for key in ("tokens_env", "api_key_env", "models", "allow_any_model", "connect_timeout",
                "max_connections"):
        assert f"{key} =" in result.output
    config = parse(tomllib.loads(_shown_file(result.output)), source="serve --help")
    assert config.upstreams["ds"].provider.key_env == "DEEPSEEK_API_KEY"
    assert config.port == 8787

