"""MkDocs hooks for the thoughtline site (``mkdocs.yml`` ``hooks:``).

Owns two checks a strict build turns into failures, and nothing else:

- links from a page to a file of the repository outside ``docs/`` (``../benchmarks/results/
  latest.md``) work on GitHub but not on the site: the file must exist, and the site shows its
  path as text instead of a dead link;
- ``routes.md`` is generated (``docs/gen_routes.py``): a page that no longer matches the route
  tables is a warning, so the build fails until it is regenerated.
"""

from __future__ import annotations

import importlib.util
import logging
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.plugins.thoughtline")

_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def _outside_links(markdown: str, page_dir: Path, docs_dir: Path, repo: Path, src: str) -> str:
    def replace(match: re.Match[str]) -> str:
        text, target = match.groups()
        if "://" in target or target.startswith(("#", "mailto:")):
            return match.group(0)
        path = (page_dir / target.split("#")[0]).resolve()
        if path.is_relative_to(docs_dir):
            return match.group(0)  # MkDocs validates links between pages itself
        if not path.is_relative_to(repo) or not path.exists():
            log.warning("%s links to %s, which is not a file of the repository", src, target)
            return match.group(0)
        shown = path.relative_to(repo).as_posix()
        return text if shown in text else f"{text} (`{shown}`)"

    pieces, last = [], 0
    for fence in _FENCE.finditer(markdown):
        pieces += [_LINK.sub(replace, markdown[last:fence.start()]), fence.group(0)]
        last = fence.end()
    return "".join([*pieces, _LINK.sub(replace, markdown[last:])])


def _generated_routes(docs_dir: Path) -> str:
    spec = importlib.util.spec_from_file_location("gen_routes", docs_dir / "gen_routes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.generate())


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs_dir = Path(config["docs_dir"]).resolve()
    repo = docs_dir.parent
    src = page.file.src_uri
    if src == "routes.md" and markdown.strip() != _generated_routes(docs_dir).strip():
        log.warning("routes.md is stale: run .venv/bin/python docs/gen_routes.py")
    page_dir = (docs_dir / src).parent
    return _outside_links(markdown, page_dir, docs_dir, repo, src)
