"""The downloads page for people: ``/craft_apps/downloads/`` and ``/craft_apps/downloads/<app_key>/``.

Contract: server-rendered from the templates under ``craft_apps/downloads/`` (a site overrides
any of them), readable without JavaScript and with no asset from elsewhere. ArtCraft Launcher
comes first as the recommended download, then one card per desktop platform for each app; the
visitor's platform (``platforms.detect_visitor``) is marked "Your system" and comes first.

A page is rendered once per state version (the endpoint's answer, ``views.answers``), variant
(the detected system) and app, and kept while what it shows is unchanged (a revalidation only
moves fetch times); a request that finds it costs about what an endpoint request costs.
``Vary`` names the headers the variant comes from, and ``Accept-CH`` asks for the CPU hints.
Cache-Control follows the endpoint: cacheable once every app was fetched.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import get_script_prefix, reverse

from craft_apps.api.caching import FRESH_FOR_A_MINUTE, NOT_CACHEABLE
from craft_apps.api.downloads import choose
from craft_apps.api.platforms import ACCEPT_CH, ARCH_TITLES, OS_TITLES, VARY, Visitor, detect_visitor
from craft_apps.api.representation import EncodedAnswer
from craft_apps.api.views import answers
from craft_apps.domain import AppReleaseInfo, CraftAppOs, CraftAppPackageType, ReleaseAsset, ReleaseInfo

LAUNCHER_KEY = "artcraft-launcher"
TEMPLATE = "craft_apps/downloads/page.html"
DESKTOP_OSES = (CraftAppOs.WINDOWS, CraftAppOs.MACOS, CraftAppOs.LINUX, CraftAppOs.FREEBSD)
PACKAGE_TITLES: dict[CraftAppPackageType, str] = {
    CraftAppPackageType.MSI: "Installer (.msi)",
    CraftAppPackageType.PORTABLE_ZIP: "Portable (.zip)",
    CraftAppPackageType.DMG: "Disk image (.dmg)",
    CraftAppPackageType.CLI_ZIP: "Command-line tools (.zip)",
    CraftAppPackageType.APP_IMAGE: "AppImage",
    CraftAppPackageType.APP_IMAGE_ZSYNC: "AppImage update data (.zsync)",
    CraftAppPackageType.DEB: "Debian and Ubuntu (.deb)",
    CraftAppPackageType.RPM: "Fedora and openSUSE (.rpm)",
    CraftAppPackageType.FLATPAK: "Flatpak bundle",
    CraftAppPackageType.TAR_GZ: "Archive (.tar.gz)",
    CraftAppPackageType.WEB_ZIP: "Browser build (.zip)",
}


# --- What the templates show --------------------------------------------------------------------


@dataclass(frozen=True)
class FileRow:
    name: str
    url: str
    size_bytes: int
    sha256: str | None
    kind: str  # "x64 · Installer (.msi)", or "Other file"


@dataclass(frozen=True)
class PlatformCard:
    os: str  # the contract's spelling, for data-os and ids
    title: str
    yours: bool
    main: FileRow | None
    main_href: str  # the stable download link of ``main``
    others: tuple[FileRow, ...]


@dataclass(frozen=True)
class AppSection:
    key: str
    name: str
    repo: str
    recommended: bool  # ArtCraft Launcher
    fetched: bool
    version: str | None
    published_at: datetime | None
    notes_url: str | None
    prerelease: bool
    cards: tuple[PlatformCard, ...]
    other_files: tuple[FileRow, ...]  # the browser build, checksums, unrecognised names
    page_url: str


def _row(asset: ReleaseAsset) -> FileRow:
    platform = asset.platform
    if platform is None:
        kind = "Other file"
    elif platform.arch is None:
        kind = PACKAGE_TITLES[platform.package_type]
    else:
        kind = f"{ARCH_TITLES[platform.arch]} · {PACKAGE_TITLES[platform.package_type]}"
    return FileRow(asset.name, asset.download_url, asset.size_bytes, asset.sha256, kind)


def _cards(key: str, app: AppReleaseInfo, visitor: Visitor) -> tuple[PlatformCard, ...]:
    release = app.latest_release
    if release is None:
        return ()
    cards: list[PlatformCard] = []
    for os in sorted(DESKTOP_OSES, key=lambda os: os is not visitor.os):  # stable: theirs first
        files = [a for a in release.assets if a.platform is not None and a.platform.os is os]
        if not files:
            continue
        yours = os is visitor.os
        # The visitor's CPU when it has a build, else the usual one (emulation runs it).
        main = (choose(files, os, visitor.arch) if yours else None) or choose(files, os, None)
        href = ""
        if main is not None and main.platform is not None and main.platform.arch is not None:
            href = reverse(
                "craft_apps:download",
                kwargs={"app_key": key, "os": os.value, "arch": main.platform.arch.value},
            )
        cards.append(
            PlatformCard(
                os=os.value,
                title=OS_TITLES[os],
                yours=yours,
                main=None if main is None else _row(main),
                main_href=href,
                others=tuple(_row(a) for a in files if a is not main),
            )
        )
    return tuple(cards)


def _section(key: str, app: AppReleaseInfo, visitor: Visitor) -> AppSection:
    release = app.latest_release
    return AppSection(
        key=key,
        name=app.name,
        repo=app.repo,
        recommended=key == LAUNCHER_KEY,
        fetched=app.app_last_fetched is not None,
        version=release.version if release else None,
        published_at=release.published_at if release else None,
        notes_url=release.html_url if release else None,
        prerelease=release.prerelease if release else False,
        cards=_cards(key, app, visitor),
        other_files=tuple(
            _row(a)
            for a in (release.assets if release else ())
            if a.platform is None or a.platform.os not in DESKTOP_OSES
        ),
        page_url=reverse("craft_apps:app_downloads", kwargs={"app_key": key}),
    )


def page_context(info: ReleaseInfo, visitor: Visitor, app_key: str | None) -> dict[str, Any] | None:
    """The template's context, or None when ``app_key`` names no configured app."""
    if app_key is not None and app_key not in info.apps:
        return None
    launcher = info.apps.get(LAUNCHER_KEY)
    keys = [app_key] if app_key is not None else [k for k in sorted(info.apps) if k != LAUNCHER_KEY]
    return {
        "visitor": visitor,
        "visitor_title": visitor.describe(),
        "launcher": None if launcher is None else _section(LAUNCHER_KEY, launcher, visitor),
        "apps": [_section(k, info.apps[k], visitor) for k in keys if k != LAUNCHER_KEY],
        "single": None if app_key is None else info.apps[app_key].name,
        "index_url": reverse("craft_apps:downloads"),
    }


# --- Rendered once per state version and variant --------------------------------------------------


@dataclass(frozen=True)
class RenderedPage:
    body: bytes
    status: int
    cache_control: str
    etag: str


def page_inputs(info: ReleaseInfo) -> tuple[object, ...]:
    """What a page shows of ``info``: not the fetch times, which move at every revalidation."""
    apps = tuple(
        (key, app.name, app.repo, app.latest_release, app.app_last_fetched is not None)
        for key, app in info.apps.items()
    )
    return (info.last_fetched is not None, apps)


class PageCache:
    """Rendered pages of the state version last seen (the endpoint's answer tells the version),
    kept across versions that change nothing a page shows."""

    MAX_PAGES = 512  # apps x detected systems is far below it; a bound all the same

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._source: EncodedAnswer | None = None
        self._inputs: tuple[object, ...] | None = None
        self._pages: dict[tuple[str | None, Visitor, str], RenderedPage] = {}

    def page(self, app_key: str | None, visitor: Visitor) -> RenderedPage:
        answer = answers.answer()
        key = (app_key, visitor, get_script_prefix())
        with self._lock:
            if answer is not self._source:
                inputs = page_inputs(answer.release_info)
                if inputs != self._inputs:
                    self._pages = {}
                self._source, self._inputs = answer, inputs
            page = self._pages.get(key)
        if page is not None:
            return page
        page = render_page(answer.release_info, visitor, app_key)
        if page.status == 200:  # an unknown key is not kept: anyone can make up many
            with self._lock:
                if self._source is answer and len(self._pages) < self.MAX_PAGES:
                    self._pages[key] = page
        return page

    def clear(self) -> None:
        with self._lock:
            self._source, self._inputs, self._pages = None, None, {}


def render_page(info: ReleaseInfo, visitor: Visitor, app_key: str | None) -> RenderedPage:
    context = page_context(info, visitor, app_key)
    status = 200
    if context is None:
        status = 404
        context = {"missing": app_key, "index_url": reverse("craft_apps:downloads"), "apps": []}
    body = render_to_string(TEMPLATE, context).encode("utf-8")
    fetched = info.last_fetched is not None and status == 200
    return RenderedPage(
        body=body,
        status=status,
        cache_control=FRESH_FOR_A_MINUTE if fetched else NOT_CACHEABLE,
        etag='"' + hashlib.sha256(body).hexdigest()[:32] + '"',
    )


pages = PageCache()


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("CRAFT_APPS", "BASE_DIR", "TEMPLATES", "USE_TZ", "TIME_ZONE"):
        pages.clear()


def respond(request: HttpRequest, app_key: str | None = None) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse(status=405)
        response["Allow"] = "GET, HEAD"
        return response
    page = pages.page(app_key, detect_visitor(request.META))
    not_modified = page.status == 200 and request.META.get("HTTP_IF_NONE_MATCH") == page.etag
    response = HttpResponse(
        b"" if request.method == "HEAD" or not_modified else page.body,
        status=304 if not_modified else page.status,
        content_type="text/html; charset=utf-8",
    )
    response["Cache-Control"] = page.cache_control
    response["ETag"] = page.etag
    response["Vary"] = VARY
    response["Accept-CH"] = ACCEPT_CH
    if request.method == "HEAD":
        response["Content-Length"] = str(len(page.body))
    return response


def downloads_page(request: HttpRequest) -> HttpResponse:
    return respond(request)


def app_downloads_page(request: HttpRequest, app_key: str) -> HttpResponse:
    return respond(request, app_key)
