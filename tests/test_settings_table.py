"""docs/settings.md's table is committed (GitHub shows the page whole) and stays what
``craft_apps.conf.SETTINGS`` declares: regenerated here and compared."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("settings_table", ROOT / "docs" / "settings_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_settings_page_holds_the_table_the_code_declares():
    from craft_apps.conf import SETTINGS

    tables = generator()
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert page == tables.with_table(page), (
        "docs/settings.md's settings table differs from craft_apps.conf.SETTINGS: "
        "regenerate it with `.venv/bin/python docs/settings_table.py` and commit it"
    )
    for setting in SETTINGS:  # and the table is there, not a directive GitHub shows as nothing
        assert f"| `{setting.key}` |" in page and f"`{setting.env}`" in page
    assert "{craft-apps-settings}" not in page


def test_a_page_without_the_markers_is_refused_with_what_they_are():
    tables = generator()
    with pytest.raises(ValueError, match="lacks the table's markers") as refused:
        tables.with_table("# Settings\n\nno table here\n")
    assert tables.BEGIN in str(refused.value)
