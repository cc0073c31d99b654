"""The apps the tests configure, and the endpoint's path."""

from __future__ import annotations

from collections.abc import Iterable

from craft_apps.kernel.domain import AppSpec

RELEASE_INFO_URL = "/v1/craft_apps/release_info"

PHOTOCRAFT = AppSpec("photocraft", "PhotoCraft", "storytold/photocraft")
ARTCRAFT_LAUNCHER = AppSpec("artcraft-launcher", "ArtCraft Launcher", "storytold/craft-launcher")
TWO_APPS = (PHOTOCRAFT, ARTCRAFT_LAUNCHER)


def apps_setting(apps: Iterable[AppSpec] = TWO_APPS) -> str:
    """``apps`` as the APPS setting's ``key=Name=org/repo,...``."""
    return ",".join(f"{app.key}={app.name}={app.repo}" for app in apps)
