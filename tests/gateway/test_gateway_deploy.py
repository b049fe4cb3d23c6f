"""The deployable unit: the Dockerfile's entry point is the gateway, run as a non-root user with
flags the real ``serve`` accepts; compose.yaml parses into PostgreSQL and two gateway replicas
whose store and tokens come from the environment. (No container engine here: nothing is built.)"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import yaml

from thoughtline.cli.serve import serve

ROOT = Path(__file__).parents[2]


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
    entry = json.loads(next(rest for word, rest in steps if word == "ENTRYPOINT"))
    command = json.loads(next(rest for word, rest in steps if word == "CMD"))
    assert entry == ["thoughtline", "serve"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    assert scripts["thoughtline"] == "thoughtline.cli.main:main"
    # The default arguments are ones `thoughtline serve` really takes (parsed, not run).
    context = serve.make_context("serve", list(command))
    assert context.params["host"] == "0.0.0.0" and context.params["port"] == 8787
    user = [rest for word, rest in steps if word == "USER"]
    assert user and user[-1] not in ("root", "0")
    assert words.index("USER") < words.index("ENTRYPOINT")
    env = " ".join(rest for word, rest in steps if word == "ENV")
    assert not re.search(r"(KEY|TOKEN|PASSWORD|DATABASE_URL)\w*=", env)  # from the environment


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
