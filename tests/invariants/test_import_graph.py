"""The package's import graph has no cycle, and the emulators import nothing else of it.

The graph is read from the source with ``ast`` (nothing is imported): every ``import`` and
``from … import`` anywhere in a module counts — at module level, inside a function (a lazy
import), under ``if TYPE_CHECKING:`` — since each is a dependency a reader and a refactoring must
follow. An edge goes to the module named, or to the submodule when ``from package import name``
names one. Importing ``a.b`` also runs ``a/__init__``, but that is Python's doing, not a
dependency of the importer: it is not an edge.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import thoughtline

SOURCE = Path(thoughtline.__file__).parent

#: Cycles known today, each removed by the branch that breaks it (and then this test fails until
#: the entry goes: an entry must name a cycle that exists).
KNOWN_CYCLES: tuple[frozenset[str], ...] = ()  # none: a new cycle is a design problem to fix


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package under ``root`` by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(node: ast.AST, name: str, is_package: bool) -> Iterator[str]:
    """The dotted names one import statement of module ``name`` brings in."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = name.split(".")
            base = base if is_package else base[:-1]
            base = base[:len(base) - node.level + 1]
            origin = ".".join([*base, *([node.module] if node.module else [])])
        else:
            origin = node.module or ""
        yield origin
        yield from (f"{origin}.{alias.name}" for alias in node.names)


def graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module → the package's modules it imports (anywhere in its source)."""
    found = modules(root, package)
    edges: dict[str, set[str]] = {}
    for name, path in found.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            names = list(_imported(node, name, is_package))
            if isinstance(node, ast.ImportFrom) and names:
                # ``from a import b``: the submodule a.b when there is one, else a itself.
                origin, members = names[0], names[1:]
                submodules = [m for m in members if m in found]
                names = submodules if len(submodules) == len(members) else [origin, *submodules]
            targets.update(_owner(n, found) for n in names)
        targets.discard(name)
        targets.discard("")
        edges[name] = targets
    return edges


def _owner(dotted: str, found: Mapping[str, Path]) -> str:
    """The longest module of the package that ``dotted`` names ("" when none)."""
    while dotted and dotted not in found:
        dotted = dotted.rpartition(".")[0]
    return dotted


def cycles(edges: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(frozenset(component))
    return out


def cycle_path(edges: Mapping[str, set[str]], component: frozenset[str]) -> list[str]:
    """One concrete cycle through ``component`` (a → b → … → a), shortest from its first
    module, to say where to cut."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(edges[node] & component):
            if child == start:
                return [*paths[node], start]
            if child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    raise AssertionError(f"{sorted(component)} is not a cycle")


def _described(edges: Mapping[str, set[str]], found: list[frozenset[str]]) -> str:
    return "\n".join(" → ".join(cycle_path(edges, c)) for c in found)


def test_the_package_imports_in_no_cycle_beyond_the_known_one() -> None:
    edges = graph(SOURCE, "thoughtline")
    found = cycles(edges)
    unknown = [c for c in found if c not in KNOWN_CYCLES]
    assert not unknown, "import cycles (lazy and TYPE_CHECKING imports count):\n" + _described(
        edges, unknown)
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in found]
    assert not gone, f"no longer a cycle, remove it from KNOWN_CYCLES: {gone}"


def test_the_emulators_import_nothing_else_of_the_package() -> None:
    # They encode the providers' documented contracts independently of the codecs they test:
    # sharing a rule with a codec would let the two agree on a mistake.
    edges = graph(SOURCE, "thoughtline")
    outside = {name: sorted(t for t in targets if not t.startswith("thoughtline.testing"))
               for name, targets in edges.items() if name.startswith("thoughtline.testing")}
    assert {name: found for name, found in outside.items() if found} == {}


# --- the reader itself: it sees every kind of import, so the tests above can fail ----------------


def _package(tmp_path: Path, files: Mapping[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("back", [
    "import pkg.a\n",
    "from pkg import a\n",
    "from . import a\n",
    "from .a import thing\n",
    "def later():\n    from pkg.a import thing\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import Thing\n",
])
def test_a_cycle_through_any_kind_of_import_is_found(tmp_path: Path, back: str) -> None:
    root = _package(tmp_path, {"__init__.py": "", "a.py": "from pkg.sub import b\n",
                               "sub/__init__.py": "", "sub/b.py": "from pkg import c\n",
                               "c.py": back})
    edges = graph(root, "pkg")
    assert cycles(edges) == [frozenset({"pkg.a", "pkg.sub.b", "pkg.c"})]
    assert cycle_path(edges, cycles(edges)[0]) == ["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]


def test_relative_imports_resolve_from_a_module_and_from_a_package(tmp_path: Path) -> None:
    root = _package(tmp_path, {"__init__.py": "", "sub/__init__.py": "from .b import x\n",
                               "sub/b.py": "from .. import c\nfrom ..c import y\n",
                               "c.py": "import os\n"})
    edges = graph(root, "pkg")
    assert edges["pkg.sub"] == {"pkg.sub.b"}
    assert edges["pkg.sub.b"] == {"pkg.c"}
    assert cycles(edges) == []


def test_an_acyclic_package_has_no_cycle(tmp_path: Path) -> None:
    root = _package(tmp_path, {"__init__.py": "from pkg.a import f\n", "a.py": "import pkg.b\n",
                               "b.py": "x = 1\n"})
    assert cycles(graph(root, "pkg")) == []
