"""House rule: provider wire field names live only in codecs (the fallback classifier is the Chat
codec's rejection reader), the route table and the emulators. Docstrings may name them (canonical
fields document their mapping); code may not."""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "thoughtline"
WIRE_NAMES = ("reasoning_content", "reasoning_details", "thoughtSignature", "thought_signature",
              "redacted_thinking", "reasoningContent", "reasoning_opaque", "reasoning_text",
              "extra_content", "signature_delta")
ALLOWED = ("codecs", "routes", "testing")


def _string_constants(tree: ast.AST) -> list[tuple[int, str]]:
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def test_wire_names_stay_in_codecs_and_the_route_table() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC)
        if relative.parts[0] in ALLOWED:
            continue
        for line, text in _string_constants(ast.parse(path.read_text("utf-8"))):
            for name in WIRE_NAMES:
                if name in text:
                    offenders.append(f"{relative}:{line}: {name}")
    assert offenders == []


def test_the_check_sees_a_violation() -> None:
    tree = ast.parse('"""doc mentions reasoning_content"""\nx = "reasoning_content"\n')
    assert [t for _, t in _string_constants(tree)] == ["reasoning_content"]
