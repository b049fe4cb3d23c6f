"""Comments cite public sources or the repository's own docs pages, never documents outside the
repository (issue 48 item 2).

A reader of a comment must be able to open what it cites: a provider's documentation URL, an SDK
file, a public issue or pull request, or a page under ``docs/``. The team's research notes
(``provider-contracts.md``, ``provider-updates.md``, the architecture notes beside them, all kept
in a folder next to the checkout) are not published, so naming them, or one of their numbered
sections (``§1a``, ``PC §7``, ``design.md §3.2``), leaves the reader with nothing to open.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "tests", "benchmarks", "docs")
TEXT = {".py", ".toml", ".md", ".txt", ".yml", ".yaml", ".cfg", ".ini", ".html", ".js", ".css",
        ".sh"}

#: What points outside the repository: the research notes by name, the folder they live in, and
#: the section sign their sections are cited by (no page under docs/ numbers its sections). A
#: section of a published standard ("RFC 7235 §2.1") is a public source and stays allowed.
OUTSIDE = re.compile(r"provider-contracts|provider-updates|\.\./shared|/work/shared"
                     r"|(?<!\bRFC \d{4} )(?<!\bRFC \d{3} )§")


def _offences(root: Path) -> list[str]:
    found = []
    for top in SCANNED:
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in TEXT or not path.is_file() or path == Path(__file__).resolve():
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if OUTSIDE.search(line):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_no_comment_cites_a_document_outside_the_repository() -> None:
    offences = _offences(ROOT)
    assert not offences, (
        "cite the public source (provider docs URL, SDK file, owner/repo#N) or a docs/ page "
        "instead:\n" + "\n".join(offences))


def test_the_guard_sees_each_form(tmp_path: Path) -> None:
    for form in ("(provider-contracts §5)", "see provider-updates.md", "../shared/docs/x.md",
                 "/work/shared/fixtures/", "(§1a)", "design.md §3.2"):
        (tmp_path / "src").mkdir(exist_ok=True)
        (tmp_path / "src" / "mod.py").write_text(f"# a fact {form}\n", encoding="utf-8")
        assert _offences(tmp_path) == [f"src/mod.py:1: # a fact {form}"], form
    (tmp_path / "src" / "mod.py").write_text(
        "# a fact (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking;"
        " docs/routes.md)\n", encoding="utf-8")
    assert _offences(tmp_path) == []
    (tmp_path / "src" / "mod.py").write_text("# case-insensitive (RFC 7235 §2.1)\n",
                                             encoding="utf-8")
    assert _offences(tmp_path) == []
