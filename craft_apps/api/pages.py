"""The downloads page for people: ``/craft_apps/downloads/`` and ``/craft_apps/downloads/<app_key>/``.

``respond(request, app_key)`` answers ``GET``/``HEAD`` with the page rendered from the templates
under ``craft_apps/downloads/`` (a site overrides any of them; readable without JavaScript, no
asset from elsewhere): 200, 304 to its ``ETag``, 404 for an unknown app, 400 for an unknown
``?channel=``. ArtCraft Launcher comes first as the recommended download, then one card per desktop
platform for each app, the visitor's (``platforms.detect_visitor``) first, marked "Your system".
``respond``'s docstring says how a page is kept. See docs/downloads.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import get_script_prefix, reverse

from craft_apps.api.caching import FRESH_FOR_A_MINUTE, NOT_CACHEABLE
from craft_apps.api.channels import STABLE, ChannelRefused, query, requested_channel
from craft_apps.api.downloads import choose, refused
from craft_apps.api.page_cache import RenderedPage
from craft_apps.api.platforms import ACCEPT_CH, ARCH_TITLES, OS_TITLES, VARY, Visitor, detect_visitor
from craft_apps.api.runtime import runtime
from craft_apps.kernel.domain import (
    AppReleaseInfo,
    CraftAppOs,
    CraftAppPackageType,
    ReleaseAsset,
    ReleaseInfo,
)

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


def _cards(key: str, app: AppReleaseInfo, visitor: Visitor, stay: str) -> tuple[PlatformCard, ...]:
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
            href = (
                reverse(
                    "craft_apps:download",
                    kwargs={"app_key": key, "os": os.value, "arch": main.platform.arch.value},
                )
                + stay
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


def _section(key: str, app: AppReleaseInfo, visitor: Visitor, stay: str = "") -> AppSection:
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
        cards=_cards(key, app, visitor, stay),
        other_files=tuple(
            _row(a)
            for a in (release.assets if release else ())
            if a.platform is None or a.platform.os not in DESKTOP_OSES
        ),
        page_url=reverse("craft_apps:app_downloads", kwargs={"app_key": key}) + stay,
    )


def page_context(
    info: ReleaseInfo, visitor: Visitor, app_key: str | None, channel: str = STABLE
) -> dict[str, Any] | None:
    """The template's context, or None when ``app_key`` names no configured app; its links
    stay on ``channel``."""
    stay = query(channel)
    if app_key is not None and app_key not in info.apps:
        return None
    launcher = info.apps.get(LAUNCHER_KEY)
    keys = [app_key] if app_key is not None else [k for k in sorted(info.apps) if k != LAUNCHER_KEY]
    return {
        "visitor": visitor,
        "visitor_title": visitor.describe(),
        "launcher": None if launcher is None else _section(LAUNCHER_KEY, launcher, visitor, stay),
        "apps": [_section(k, info.apps[k], visitor, stay) for k in keys if k != LAUNCHER_KEY],
        "single": None if app_key is None else info.apps[app_key].name,
        "index_url": reverse("craft_apps:downloads") + stay,
    }


# --- Rendered once per state version and variant (page_cache keeps it) ----------------------------


def render_page(
    info: ReleaseInfo, visitor: Visitor, app_key: str | None, channel: str = STABLE
) -> RenderedPage:
    context = page_context(info, visitor, app_key, channel)
    status = 200
    if context is None:
        status = 404
        index = reverse("craft_apps:downloads") + query(channel)
        context = {"missing": app_key, "index_url": index, "apps": []}
    body = render_to_string(TEMPLATE, context).encode("utf-8")
    fetched = info.last_fetched is not None and status == 200
    return RenderedPage(
        body=body,
        status=status,
        cache_control=FRESH_FOR_A_MINUTE if fetched else NOT_CACHEABLE,
        etag='"' + hashlib.sha256(body).hexdigest()[:32] + '"',
    )


def respond(request: HttpRequest, app_key: str | None = None) -> HttpResponse:
    """The page of ``app_key`` (every app when None) on the channel the request asks for.

    A page is rendered once per state version (the endpoint's answer, from the process's runtime),
    variant (the detected system) and app, and kept while what it shows is unchanged
    (``page_cache``): a request that finds it costs about what an endpoint request costs. ``Vary``
    names the headers the variant comes from, and ``Accept-CH`` asks for the CPU hints.
    ``Cache-Control`` follows the endpoint: cacheable once every app was fetched. ``?channel=beta``
    shows the releases of the beta channel's answer (``channels``), and its links (to the other
    pages and to the download redirects) keep the channel.
    """
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse(status=405)
        response["Allow"] = "GET, HEAD"
        return response
    channel = requested_channel(request)
    if isinstance(channel, ChannelRefused):
        return refused(request, channel.reason, 400)
    visitor = detect_visitor(request.META)
    web = runtime()
    answer = web.answers.answer(channel)
    page = web.pages.page(
        answer,
        (app_key, visitor, get_script_prefix()),
        lambda: render_page(answer.release_info, visitor, app_key, channel),
    )
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
