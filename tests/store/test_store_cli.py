"""The CLI's store choice: ``--store URL|PATH`` beats ``$THOUGHTLINE_DATABASE_URL`` beats home."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from store_backends import Backend

from thoughtline.cli.main import cli
from thoughtline.store import open_store


def _listed(*args: str) -> list[str]:
    result = CliRunner().invoke(cli, [*args, "sessions", "list", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [s["title"] for s in json.loads(result.output)]


def test_store_option_selects_the_backend(backend: Backend, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THOUGHTLINE_DATABASE_URL", raising=False)
    backend.store.create_session(title="on the chosen store")
    home = tmp_path / "cli-home"
    assert _listed("--home", str(home), "--store", backend.target) == ["on the chosen store"]
    assert _listed("--home", str(home)) == []  # without it: the home's own state.db


def test_store_option_beats_the_environment(backend: Backend, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    backend.store.create_session(title="explicit")
    other = tmp_path / "env.db"
    with open_store(other, tmp_path) as env_store:  # type: ignore[attr-defined]
        env_store.create_session(title="from env")
    monkeypatch.setenv("THOUGHTLINE_DATABASE_URL", str(other))
    home = str(tmp_path / "cli-home")
    assert _listed("--home", home) == ["from env"]
    assert _listed("--home", home, "--store", backend.target) == ["explicit"]
