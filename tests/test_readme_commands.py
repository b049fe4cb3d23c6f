"""README's two commands are the ones that run: CI runs the test command verbatim, and that
command first provisions what the suite needs (so it passes on a fresh machine as written)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _block_after(text: str, lead: str) -> str:
    found = re.search(re.escape(lead) + r"\s*```bash\n(.+?)\n```", text, re.S)
    assert found, f"README has no command block after {lead!r}"
    return found.group(1).strip()


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    command = _block_after((ROOT / "README.md").read_text(), "Set up and run the tests:")
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in lines


def test_the_test_command_provisions_the_services_first() -> None:
    command = _block_after((ROOT / "README.md").read_text(), "Set up and run the tests:")
    first = command.split("&&")[0].strip()
    assert first == "bash scripts/test-services"
    script = (ROOT / "scripts" / "test-services").read_text()
    for needed in ("postgresql", "chromium-driver", "createdb test"):
        assert needed in script
