"""Every function of the package is under 50 lines long, from its ``def`` to its last line
(CONTRIBUTING.md's standard): a longer one is split by meaning before it is merged."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "craft_apps"
MAX_LINES = 49


def lengths() -> dict[str, int]:
    """Each function and method of the package, as ``path:line name``, with its length."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}"
                found[where] = (node.end_lineno or node.lineno) - node.lineno + 1
    return found


def test_every_function_is_under_50_lines() -> None:
    assert {where: n for where, n in lengths().items() if n > MAX_LINES} == {}


def test_the_count_sees_the_functions_and_their_lengths() -> None:
    found = lengths()
    assert len(found) > 500
    assert any(where.endswith(" serve") and n > 20 for where, n in found.items())
