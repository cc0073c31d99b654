"""The demo's Tauri app and every feature its landing page links to, shared by the demo's tests."""

from __future__ import annotations

from craft_apps.conf import DEFAULT_APPS
from craft_apps.testing.demo_releases import TAURI_APP

[LIGHTCRAFT] = [app for app in DEFAULT_APPS if app.key == TAURI_APP]

# Each feature the landing page links to, and its link.
FEATURES = {
    "release_info": "/v1/craft_apps/release_info",
    "beta channel": "/v1/craft_apps/release_info?channel=beta",
    "downloads page": "/craft_apps/downloads/",
    "Tauri updater": "/v1/craft_apps/updates/tauri/lightcraft/linux/x86_64/1.9.0",
    "renames": "/admin/craft_apps/apprename/",
    "notices": "/admin/craft_apps/announcement/",
    "app channels": "/admin/craft_apps/appchannel/",
    "release controls": "/admin/craft_apps/releasecontrol/",
    "release policies": "/admin/craft_apps/releasepolicy/",
    "signed feed doc": "/docs/signed-feed.md",
    "Tauri doc": "/docs/tauri.md",
    "controls doc": "/docs/controls.md",
    "channels doc": "/docs/channels.md",
}
