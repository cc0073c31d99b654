"""A module of the kernel, the content or the controls package opens with a short docstring: at
most six lines, with a link to the docs page that explains the rest (a page that exists). A module
of the other packages listed in ``PLAIN`` opens with one of at most eight lines. The cases a
module covers live in its tests and in the docs, not in its docstring."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "craft_apps"
HELD = ("kernel", "content", "controls")
MAX_LINES = 6
# A package's own docstring names each of its modules instead (tests/test_package_docstrings.py).
MODULES = sorted(p for part in HELD for p in (PACKAGE / part).glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_module_docstring_is_short_and_links_its_docs_page(path: Path) -> None:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert doc, f"{path.relative_to(ROOT)} has no docstring"
    assert len(doc.splitlines()) <= MAX_LINES, f"{len(doc.splitlines())} lines; say the rest in docs/"
    pages = re.findall(r"docs/([\w-]+\.md)", doc)
    assert pages, "link the docs page that explains the rest (docs/xxx.md)"
    assert [page for page in pages if not (ROOT / "docs" / page).is_file()] == []


def test_the_rule_holds_some_modules() -> None:
    assert len(MODULES) >= 15


# The packages whose module docstrings say what the module holds and what its main function takes
# and returns, in at most eight lines (issue 39); subpackages included.
PLAIN = (
    "github",
    "host",
    "fleet",
    "testing",
    "admin",
    "management",
    "ops",
    "kernel",
    "api",
    "reports",
    "polling",
    "tauri",
    "controls",
)
PLAIN_MAX_LINES = 8
PLAIN_MODULES = sorted(p for part in PLAIN for p in (PACKAGE / part).rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("path", PLAIN_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_module_docstring_has_at_most_eight_lines(path: Path) -> None:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert doc, f"{path.relative_to(ROOT)} has no docstring"
    assert len(doc.splitlines()) <= PLAIN_MAX_LINES, f"{len(doc.splitlines())} lines; say the rest in docs/"


def test_the_eight_line_rule_holds_some_modules() -> None:
    assert len(PLAIN_MODULES) >= 60
