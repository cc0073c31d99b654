"""Sphinx's configuration of the documentation site: Markdown pages (MyST) with the furo theme.

Build it with ``sphinx-build -W --keep-going -b html docs docs/_build/html``;
``tests/test_docs_site.py`` does the same with warnings as errors on every Python/Django pair.
The settings page's table is generated here from ``craft_apps.conf.SETTINGS`` (the
``craft-apps-settings`` directive), so it can't drift from the code.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # craft_apps from this checkout, installed or not

import craft_apps  # noqa: E402

project = "django-craft-apps"
author = "The django-craft-apps authors"
copyright = "The django-craft-apps authors"
release = craft_apps.__version__
version = release

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
# `[text](#a-heading)` and `[text](page.md#a-heading)` resolve to headings down to level 3;
# a link to a heading that doesn't exist is a warning, and so a failed build.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]
# The site is built offline: no intersphinx, no remote images.
html_theme = "furo"
html_title = f"django-craft-apps {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
html_copy_source = False
nitpicky = True


class SettingsTable(SphinxDirective):
    """Every setting in ``conf.SETTINGS``, in its order: key, type, default, environment variable."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from craft_apps.conf import SETTINGS

        lines = [
            "| `CRAFT_APPS` key | type | default | environment variable |",
            "|---|---|---|---|",
            *(f"| `{s.key}` | {s.type_doc} | {s.default_doc} | `{s.env}` |" for s in SETTINGS),
        ]
        container = nodes.container(classes=["craft-apps-settings"])
        self.state.nested_parse(StringList(lines, source="craft_apps.conf.SETTINGS"), 0, container)
        return [container]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("craft-apps-settings", SettingsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
