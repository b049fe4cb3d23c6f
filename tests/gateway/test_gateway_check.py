"""``thoughtline serve --check``: one line per upstream (key variable, URL), the bind and the
store, exit 0 or 2, through the real entry point; nothing is served."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

TOML = """
[server]
host = "127.0.0.1"

[[upstream]]
name = "ds"
provider = "deepseek"
base_url = "http://127.0.0.1:9001/v1"
api_key_env = "TL_CHECK_DS_KEY"

[[upstream]]
name = "local"
provider = "my-vllm"
base_url = "{local_url}"
"""


def _check(tmp_path: Path, env: dict[str, str], local_url: str = "http://127.0.0.1:8000/v1"
           ) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "gateway.toml"
    config.write_text(TOML.format(local_url=local_url), "utf-8")
    argv = [sys.executable, "-c", "from thoughtline.cli.main import main; main()",
            "--home", str(tmp_path / "home"), "serve", "--config", str(config), "--check"]
    clean = {k: v for k, v in os.environ.items()
             if k not in ("TL_CHECK_DS_KEY", "THOUGHTLINE_DATABASE_URL")}
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          env={**clean, **env}, stdin=subprocess.DEVNULL)


def test_check_passes_when_every_key_is_set_and_names_each_upstream(tmp_path: Path) -> None:
    result = _check(tmp_path, {"TL_CHECK_DS_KEY": "sk-check-secret-91b2"})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["ok", "ok", "ok", "ok"]
    assert "'ds'" in lines[0] and "TL_CHECK_DS_KEY" in lines[0] and "'local'" in lines[1]
    assert "store" in lines[3]
    assert "sk-check-secret-91b2" not in result.stdout + result.stderr


def test_check_names_an_unset_key_variable_and_exits_2(tmp_path: Path) -> None:
    result = _check(tmp_path, {})
    assert result.returncode == 2
    (failed,) = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert "upstream 'ds'" in failed and "TL_CHECK_DS_KEY is not set" in failed


def test_check_names_a_malformed_url(tmp_path: Path) -> None:
    result = _check(tmp_path, {"TL_CHECK_DS_KEY": "k"}, local_url="ftp://127.0.0.1/v1")
    assert result.returncode == 2
    (failed,) = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert "upstream 'local'" in failed and "http://" in failed


def test_check_names_a_store_it_cannot_open(tmp_path: Path) -> None:
    result = _check(tmp_path, {"TL_CHECK_DS_KEY": "k",
                               "THOUGHTLINE_DATABASE_URL": "mysql://nowhere/db"})
    assert result.returncode == 2
    (failed,) = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert failed.startswith("FAIL store") and "mysql" in failed


def test_check_of_an_unreachable_postgresql_fails_and_writes_json_lines_only(
        tmp_path: Path) -> None:
    result = _check(tmp_path, {"TL_CHECK_DS_KEY": "k",
                               "THOUGHTLINE_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/t"})
    assert result.returncode == 2
    (failed,) = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert failed.startswith("FAIL store: cannot reach the store") and "127.0.0.1:1" in failed
    records = [orjson.loads(line) for line in result.stderr.splitlines()]  # the pool's included
    assert all(r["event"] == "server" for r in records)
    # One refused attempt is the answer: no pool was opened to retry it for the store's wait.
    assert not [r for r in records if "error connecting" in r.get("message", "")], records


def test_check_does_not_load_the_server(tmp_path: Path) -> None:
    """The check imports only what it checks (the faces and uvicorn are most of a start)."""
    config = tmp_path / "gateway.toml"
    config.write_text(TOML.format(local_url="http://127.0.0.1:8000/v1"), "utf-8")
    probe = ("import sys\nfrom thoughtline.cli.main import main\ntry:\n    main()\n"
             "finally:\n    print('loaded' if 'thoughtline.gateway.server' in sys.modules "
             "else 'not loaded')")
    argv = [sys.executable, "-c", probe, "--home", str(tmp_path / "home"), "serve",
            "--config", str(config), "--check"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "TL_CHECK_DS_KEY": "k"}, stdin=subprocess.DEVNULL)
    assert result.stdout.splitlines()[-1] == "not loaded", result.stdout + result.stderr
