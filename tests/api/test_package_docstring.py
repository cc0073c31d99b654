"""The HTTP side's package docstring names every module of it, and the architecture page's
Layout row does too (a module added without a word there fails here)."""

from __future__ import annotations

from pathlib import Path

import craft_apps.api

API = Path(craft_apps.api.__file__).parent
LAYOUT = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
MODULES = sorted(p.stem for p in API.glob("*.py") if p.stem != "__init__")


def test_the_package_docstring_names_every_module():
    doc = craft_apps.api.__doc__ or ""
    assert [m for m in MODULES if f"``{m}``" not in doc] == []


def test_the_layout_row_names_every_module():
    [row] = [line for line in LAYOUT.read_text(encoding="utf-8").splitlines() if "`craft_apps/api/`" in line]
    assert [m for m in MODULES if f"`{m}`" not in row] == []
