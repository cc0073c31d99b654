"""Every package's docstring names each of its modules, and so does its row of the architecture
page's Layout table: a module added without a word in both places fails here. The README's
layout paragraph names every top package."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "craft_apps"
LAYOUT = PACKAGE.parent / "docs" / "architecture.md"
# Where Django looks for migrations: generated files, named by Django's own rule.
NOT_DESCRIBED = {"migrations"}
PACKAGES = sorted(
    p.parent for p in PACKAGE.rglob("__init__.py") if not NOT_DESCRIBED & set(p.relative_to(PACKAGE).parts)
)


def modules(package: Path) -> list[str]:
    """The package's modules and subpackages, by name."""
    found = [p.stem for p in package.glob("*.py") if p.stem != "__init__"]
    found += [p.parent.name for p in package.glob("*/__init__.py") if p.parent.name not in NOT_DESCRIBED]
    return sorted(found)


def docstring(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""


def layout_rows() -> dict[str, str]:
    """The Layout table's rows by the path in their first cell (``craft_apps/host/``)."""
    rows = {}
    for line in LAYOUT.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `(craft_apps/[^`]*)`", line)
        if match:
            rows[match.group(1)] = line
    return rows


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_the_package_docstring_names_every_module(package: Path) -> None:
    doc = docstring(package)
    missing = [name for name in modules(package) if f"``{name}``" not in doc]
    where = package.relative_to(PACKAGE.parent)
    assert not missing, f"{where}/__init__.py's docstring doesn't name {missing}"


# The package itself has the rows of its top-level modules; ``management`` holds only
# ``commands``, which has its own row.
IN_THE_TABLE = [p for p in PACKAGES if p not in (PACKAGE, PACKAGE / "management")]


@pytest.mark.parametrize("package", IN_THE_TABLE, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_the_layout_row_names_every_module(package: Path) -> None:
    path = f"{package.relative_to(PACKAGE.parent)}/"
    row = layout_rows().get(path)
    assert row is not None, f"docs/architecture.md's Layout table has no row for {path}"
    assert [name for name in modules(package) if f"`{name}`" not in row] == []


def test_every_module_at_the_top_has_a_layout_row() -> None:
    table = "\n".join(layout_rows().values())
    top = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert [name for name in top if f"`{name}`" not in table and f"/{name}`" not in table] == []


# What Django finds by its name; the README says so in one phrase instead of naming each.
DJANGO_NAMES = {"admin", "management", "migrations"}


def test_the_readmes_layout_names_every_top_package() -> None:
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Develop", 1)[1].split("\n\n", 2)[1]
    top = {p.parent.name for p in PACKAGE.glob("*/__init__.py")} - DJANGO_NAMES
    assert [name for name in sorted(top) if f"{name}/`" not in layout] == []
