"""The docs site builds with warnings as errors, says what the code does, and the README stays the
front door (issue 48 item 2).

The strict build is the CI check: a broken link between pages, a link to a repository file that
does not exist, or a stale generated routes page fails it (``docs/hooks.py``). The routes page and
the library's first example are also checked directly, so their failures name the cause.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "THOUGHTLINE_DATABASE_URL"}
    env.update(NO_MKDOCS_2_WARNING="1", **extra)  # Material's end-of-life banner: noise here
    return env


def test_the_site_builds_strict(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, timeout=110, cwd=ROOT, env=_env())
    assert built.returncode == 0, built.stdout + built.stderr
    for page in ("library", "gateway", "routes", "faces", "benchmarks", "design"):
        assert (tmp_path / "site" / page / "index.html").is_file(), page
    assert (tmp_path / "site" / "ui-session.png").is_file()


def test_the_routes_page_is_generated_from_the_route_tables() -> None:
    spec = importlib.util.spec_from_file_location("gen_routes", DOCS / "gen_routes.py")
    assert spec is not None and spec.loader is not None
    gen_routes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_routes)
    assert (DOCS / "routes.md").read_text("utf-8") == gen_routes.generate(), (
        "docs/routes.md is stale: run .venv/bin/python docs/gen_routes.py")


def test_the_readme_is_the_front_door() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) <= 250
    for page in ("getting-started", "cli", "library", "gateway", "claude-code", "codex",
                 "providers", "routes", "faces", "benchmarks", "design"):
        assert f"(docs/{page}.md)" in readme, page


def test_the_library_page_opens_with_a_session_in_ten_lines_that_runs(tmp_path: Path) -> None:
    page = (DOCS / "library.md").read_text("utf-8")
    first = re.search(r"```python\n(.+?)```", page, re.S)
    assert first is not None
    code = first.group(1)
    body = [line for line in code.splitlines()
            if line.strip() and not line.startswith(("import ", "from "))]
    assert len(body) <= 10, body
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path, env=_env(THOUGHTLINE_HOME=str(tmp_path)))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    answers = ran.stdout.splitlines()
    assert len(answers) == 2 and all(" → " in line for line in answers), ran.stdout
    assert (tmp_path / "state.db").is_file()
