"""The deployable unit: the Dockerfile's entry point is the gateway, run as a non-root user with
flags the real ``serve`` accepts; compose.yaml parses into PostgreSQL and two gateway replicas
whose store and tokens come from the environment. (No container engine here: nothing is built.)"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from thoughtline.cli.serve import serve

ROOT = Path(__file__).parents[2]
IMAGE_CONFIG = "/etc/thoughtline/gateway.toml"
TOML = """
[[upstream]]
name = "ds"
provider = "deepseek"
api_key_env = "TL_DEPLOY_KEY"
"""


def _instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text("utf-8").replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_the_image_runs_the_gateway_as_a_non_root_user() -> None:
    steps = _instructions()
    words = [word for word, _ in steps]
    entry, command = _entry_and_command()
    assert entry[:2] == ["thoughtline", "serve"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    assert scripts["thoughtline"] == "thoughtline.cli.main:main"
    # The arguments are ones `thoughtline serve` really takes (parsed, not run); the bind is the
    # entry point's, so arguments given to `docker run` (which replace CMD) keep it.
    context = serve.make_context("serve", [*entry[2:], *command])
    assert context.params["host"] == "0.0.0.0" and context.params["port"] == 8787
    assert context.params["config_path"] == IMAGE_CONFIG
    assert serve.make_context("serve", entry[2:]).params["host"] == "0.0.0.0"
    user = [rest for word, rest in steps if word == "USER"]
    assert user and user[-1] not in ("root", "0")
    assert words.index("USER") < words.index("ENTRYPOINT")
    env = " ".join(rest for word, rest in steps if word == "ENV")
    assert not re.search(r"(KEY|TOKEN|PASSWORD|DATABASE_URL)\w*=", env)  # from the environment


def test_check_with_the_documented_arguments_checks_the_bind_the_image_will_serve_on(
        tmp_path: Path) -> None:
    """Without tokens the container would refuse to start (it binds 0.0.0.0): the documented
    ``docker run … --check`` (docs/operations.md) fails with the very message the real start
    gives."""
    entry, command = _entry_and_command()
    config = tmp_path / "gateway.toml"
    config.write_text(TOML, "utf-8")
    page = (ROOT / "docs" / "operations.md").read_text("utf-8")
    called = re.search(r"thoughtline-gateway \\\n(.*--check)\n", page)
    assert called, "docs/operations.md's docker run … --check"
    check_args = [str(config) if a == IMAGE_CONFIG else a for a in shlex.split(called.group(1))]
    start_args = [str(config) if a == IMAGE_CONFIG else a for a in command]

    checked = _run_image(entry, check_args, tmp_path)
    started = _run_image(entry, start_args, tmp_path)

    assert started.returncode == 2, started.stdout + started.stderr  # refused before any bind
    refusal = started.stderr.strip().removeprefix("error: ")
    assert refusal.startswith("refusing to listen on 0.0.0.0")
    assert checked.returncode == 2
    (failed,) = [line for line in checked.stdout.splitlines() if line.startswith("FAIL")]
    assert failed == f"FAIL server 0.0.0.0:8787: {refusal}"


def _entry_and_command() -> tuple[list[str], list[str]]:
    steps = _instructions()
    entry = json.loads(next(rest for word, rest in steps if word == "ENTRYPOINT"))
    command = json.loads(next(rest for word, rest in steps if word == "CMD"))
    return entry, command


def _run_image(entry: list[str], args: list[str], tmp_path: Path,
               ) -> subprocess.CompletedProcess[str]:
    """The image's command line, as the container runs it, with a SQLite store in ``tmp_path``
    and no tokens (the environment the documented ``docker run`` passes when they are unset)."""
    argv = [sys.executable, "-c", "from thoughtline.cli.main import main; main()",
            *entry[1:], *args]
    env = {k: v for k, v in os.environ.items()
           if k not in ("THOUGHTLINE_GATEWAY_TOKENS", "THOUGHTLINE_DATABASE_URL")}
    env.update(THOUGHTLINE_HOME=str(tmp_path / "home"), TL_DEPLOY_KEY="sk-deploy-test")
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env,
                          stdin=subprocess.DEVNULL)


def test_compose_runs_postgres_and_two_gateway_replicas_configured_by_the_environment() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text("utf-8"))
    services = compose["services"]
    gateways = {name: s for name, s in services.items() if s.get("build") == "."}
    databases = [s for s in services.values() if str(s.get("image", "")).startswith("postgres")]
    assert len(gateways) == 2 and len(databases) == 1
    (db_name,) = [name for name, s in services.items() if s in databases]
    for gateway in gateways.values():
        env = gateway["environment"]
        assert env["THOUGHTLINE_DATABASE_URL"].startswith(f"postgresql://thoughtline@{db_name}:")
        assert env["THOUGHTLINE_GATEWAY_TOKENS"].startswith("${")
        assert env["PGPASSWORD"].startswith("${")
        assert db_name in gateway["depends_on"]
    published = sorted(p.split(":")[0] for g in gateways.values() for p in g["ports"])
    assert len(set(published)) == 2
