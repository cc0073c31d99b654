"""Every app key a docs page puts in an endpoint URL is one the default ``APPS`` serves."""

from __future__ import annotations

import re
from pathlib import Path

from craft_apps.conf import DEFAULT_APPS

DOCS = Path(__file__).resolve().parent.parent / "docs"
APP_IN_URL = re.compile(r"/v1/craft_apps/updates/tauri/([a-z0-9-]+)/")


def test_the_tauri_urls_of_the_docs_name_apps_the_default_apps_serve():
    keys = {app.key for app in DEFAULT_APPS}
    named = {(page.name, key) for page in DOCS.glob("*.md") for key in APP_IN_URL.findall(page.read_text())}
    assert named, "no Tauri URL found in docs/"
    assert {(page, key) for page, key in named if key not in keys} == set()
