"""``thoughtline --store URL serve`` puts the gateway on that store, over gateway.toml's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from gateway_support import gateway_toml

from thoughtline.cli.main import cli
from thoughtline.gateway import server
from thoughtline.testing import ChatEmulator


@pytest.mark.parametrize("in_toml", [False, True])
def test_the_global_store_option_reaches_the_gateway(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     in_toml: bool) -> None:
    url = "postgresql://tl@db.internal/thoughtline"  # never opened: serve itself is replaced
    seen: list[Any] = []
    monkeypatch.setattr(server, "serve", lambda config, home, **_: seen.append(config))
    with ChatEmulator("deepseek") as emu:
        extra = f'store = "{tmp_path / "other.db"}"\n' if in_toml else ""
        config = tmp_path / "gateway.toml"
        config.write_text(gateway_toml(emu, extra_server=extra))
        result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "--store",
                                          url, "serve", "--config", str(config)],
                                    catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (config_seen,) = seen
    assert config_seen.store == url
