"""The downloads page: what it shows, for whom, how it is cached, and how a site overrides it."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from craft_apps.api import pages
from craft_apps.api.runtime import runtime
from craft_apps.kernel.domain import AppState
from tests.api.downloads_support import EVERY_FILE, FETCHED_MS, download_site, release_of, url_of
from tests.support import SHA, publish

__all__ = ["download_site"]  # the fixture

INDEX = "/craft_apps/downloads/"
WINDOWS_X64 = {
    "HTTP_USER_AGENT": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/130.0.0.0 Safari/537.36",
    "HTTP_SEC_CH_UA_PLATFORM": '"Windows"',
}
WINDOWS_ARM = {**WINDOWS_X64, "HTTP_SEC_CH_UA_ARCH": '"arm"', "HTTP_SEC_CH_UA_BITNESS": '"64"'}
MAC_ARM = {
    "HTTP_USER_AGENT": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) Chrome/130.0.0.0 Safari/537.36",
    "HTTP_SEC_CH_UA_PLATFORM": '"macOS"',
    "HTTP_SEC_CH_UA_ARCH": '"arm"',
}
LINUX = {"HTTP_USER_AGENT": "Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0"}


class Page(HTMLParser):
    """What the tests look at in a rendered page: sections, cards, links, ids."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.html = html
        self.sections: list[str] = []  # app keys, in order
        self.cards: list[tuple[str, str]] = []  # (app key, os), in order
        self.yours: list[tuple[str, str]] = []
        self.main_links: dict[tuple[str, str], str] = {}
        self.links: list[str] = []
        self.ids: list[str] = []
        self.labelledby: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._section: str = ""
        self._card: tuple[str, str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if a.get("id"):
            self.ids.append(str(a["id"]))
        if a.get("aria-labelledby"):
            self.labelledby.append(str(a["aria-labelledby"]))
        if tag == "section" and str(a.get("id", "")).startswith("app-"):
            self._section = str(a["id"])[4:]
            self.sections.append(self._section)
        if tag == "article":
            self._card = (self._section, str(a["data-os"]))
            self.cards.append(self._card)
            if "yours" in str(a.get("class")).split():
                self.yours.append(self._card)
        if tag == "a" and a.get("href"):
            self.links.append(str(a["href"]))
            if "data-main" in a and self._card is not None:
                self.main_links[self._card] = str(a["href"])

    def cards_of(self, key: str) -> list[str]:
        return [os for app, os in self.cards if app == key]


def get_page(client: Client, path: str = INDEX, **headers: Any) -> Page:
    response = client.get(path, **headers)
    assert response.status_code == 200
    return Page(response.content.decode())


def publish_all(site: Path, launcher_files: tuple[str, ...] = EVERY_FILE) -> None:
    launcher = release_of(
        *launcher_files, app="artcraft-launcher", repo="storytold/craft-launcher", version="0.2.0"
    )
    publish(
        site,
        {
            "photocraft": AppState(latest_release=release_of(*EVERY_FILE), fetched_ms=FETCHED_MS),
            "artcraft-launcher": AppState(latest_release=launcher, fetched_ms=FETCHED_MS),
        },
    )


def test_the_launcher_comes_first_then_every_app_with_a_card_per_desktop_platform(download_site, client):
    publish_all(download_site)
    page = get_page(client)
    assert page.sections == ["artcraft-launcher", "photocraft"]
    assert "Recommended" in page.html and "installs every Craft App" in page.html
    assert page.cards_of("photocraft") == ["windows", "macos", "linux", "freebsd"]
    assert page.yours == [], "nothing detected, nothing marked"
    assert "Your system" not in page.html


@pytest.mark.parametrize(
    ("headers", "os", "main"),
    [
        (WINDOWS_X64, "windows", "photocraft/windows/x64"),
        (WINDOWS_ARM, "windows", "photocraft/windows/arm64"),
        (MAC_ARM, "macos", "photocraft/macos/universal"),
        (LINUX, "linux", "photocraft/linux/x64"),
    ],
)
def test_the_visitors_platform_is_marked_and_first(download_site, client, headers, os, main):
    publish_all(download_site)
    page = get_page(client, **headers)
    assert page.cards_of("photocraft")[0] == os
    assert page.cards_of("artcraft-launcher")[0] == os
    assert page.yours == [("artcraft-launcher", os), ("photocraft", os)]
    assert page.html.count('<span class="badge">Your system</span>') == 2
    assert page.main_links[("photocraft", os)] == f"/v1/craft_apps/download/{main}"


def test_a_cpu_without_its_own_build_gets_the_usual_one(download_site, client):
    publish(
        download_site, {"photocraft": AppState(latest_release=release_of("windows-x64.msi"), fetched_ms=1)}
    )
    page = get_page(client, **WINDOWS_ARM)
    assert page.main_links[("photocraft", "windows")] == "/v1/craft_apps/download/photocraft/windows/x64"


def test_every_main_button_leads_to_the_file_the_card_names(download_site, client):
    publish_all(download_site)
    for headers in ({}, WINDOWS_X64, WINDOWS_ARM, MAC_ARM, LINUX):
        page = get_page(client, **headers)
        for (app, os), href in page.main_links.items():
            location = client.get(href)["Location"]
            card = re.search(
                f'data-os="{os}" aria-labelledby="card-{app}-{os}">(.*?)</article>', page.html, re.S
            )
            assert card is not None
            file_name = location.rsplit("/", 1)[1]
            assert f'data-file="{file_name}"' in card.group(1).split("</a>")[0], (app, os, headers)


def test_a_card_lists_the_other_files_with_size_and_sha256_and_the_release(download_site, client):
    publish_all(download_site)
    page = get_page(client, **WINDOWS_X64)
    windows = page.html.split('aria-labelledby="card-photocraft-windows"')[1].split("</article>")[0]
    for name in ("windows-arm64.msi", "windows-x64-portable.zip", "windows-x86-portable.zip"):
        assert f'<a href="{url_of("photocraft-0.5.0-" + name)}">photocraft-0.5.0-{name}</a>' in windows
    assert windows.count(f'<code data-sha256 data-file="photocraft-0.5.0-windows-x64.msi">{SHA}</code>') == 1
    assert windows.count("<code data-sha256") == 4
    assert "976.6\xa0KB" in windows and "3.8\xa0MB" in windows  # sizes of the first and fourth file
    assert "Version <strong>0.5.0</strong>" in page.html
    assert '<time datetime="2026-10-08T14:52:50+00:00">8 October 2026</time>' in page.html
    assert 'href="https://github.com/storytold/photocraft/releases/tag/v0.5.0"' in page.html
    others = page.html.split("Other files of PhotoCraft 0.5.0")[1].split("</details>")[0]
    assert "photocraft-web-0.5.0.zip" in others and "SHA256SUMS.txt" in others


def test_apps_not_fetched_yet_or_without_a_release_say_so(download_site, client):
    publish(download_site, {"photocraft": AppState(latest_release=None, fetched_ms=FETCHED_MS)})
    page = get_page(client)
    assert "Not fetched yet: this server has not heard from GitHub about ArtCraft Launcher yet" in page.html
    assert "PhotoCraft has no published release yet." in page.html
    assert page.cards == []


def test_an_app_page_recommends_the_launcher_then_the_app_alone(download_site, client):
    publish_all(download_site)
    page = get_page(client, "/craft_apps/downloads/photocraft/", **MAC_ARM)
    assert page.sections == ["artcraft-launcher", "photocraft"]
    assert "<h1>Download PhotoCraft</h1>" in page.html
    assert "Option 1 · Recommended" in page.html and "Get PhotoCraft with ArtCraft Launcher" in page.html
    assert "Option 2 · Standalone" in page.html
    assert page.yours == [("artcraft-launcher", "macos"), ("photocraft", "macos")]
    launcher_page = get_page(client, "/craft_apps/downloads/artcraft-launcher/")
    assert launcher_page.sections == ["artcraft-launcher"] and "Option" not in launcher_page.html


def test_an_unknown_app_page_is_a_404_page_never_kept(download_site, client):
    response = client.get("/craft_apps/downloads/nosuchapp/")
    assert response.status_code == 404
    assert response["Cache-Control"] == "no-store"
    assert "There is no app called “nosuchapp” here." in response.content.decode()
    assert len(runtime().pages) == 0


def test_headers_vary_on_what_detection_reads_and_follow_the_endpoint_for_caching(download_site, client):
    response = client.get(INDEX)
    assert response["Vary"] == "Sec-CH-UA-Platform, Sec-CH-UA-Arch, Sec-CH-UA-Bitness, User-Agent"
    assert response["Accept-CH"] == "Sec-CH-UA-Platform, Sec-CH-UA-Arch, Sec-CH-UA-Bitness"
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert response["Cache-Control"] == "no-store", "not every app was fetched"
    publish_all(download_site)
    response = client.get(INDEX)
    assert response["Cache-Control"] == "public, max-age=60"
    etag = response["ETag"]
    again = client.get(INDEX, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b""
    head = client.head(INDEX)
    assert (
        head.status_code == 200
        and head.content == b""
        and int(head["Content-Length"]) == len(response.content)
    )
    assert client.post(INDEX).status_code == 405


def test_rendered_once_per_state_version_and_variant(download_site, client, monkeypatch):
    rendered: list[object] = []
    real = pages.render_page

    def counting(*args):
        rendered.append(args[1])
        return real(*args)

    monkeypatch.setattr(pages, "render_page", counting)
    publish_all(download_site)
    for _ in range(3):
        client.get(INDEX, **WINDOWS_X64)
        client.get(INDEX, **MAC_ARM)
    assert len(rendered) == 2
    # Another browser on the same system is the same variant.
    client.get(INDEX, HTTP_USER_AGENT="Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:131.0) Firefox/131.0")
    assert len(rendered) == 2
    # A revalidation moves only fetch times, which the page doesn't show: nothing is rendered.
    before = runtime().answers.answer()
    publish(
        download_site,
        {"photocraft": AppState(latest_release=release_of(*EVERY_FILE), fetched_ms=FETCHED_MS + 1)},
    )
    client.get(INDEX, **WINDOWS_X64)
    assert runtime().answers.answer() is not before, "a new state version"
    assert len(rendered) == 2
    publish(
        download_site,
        {
            "photocraft": AppState(
                latest_release=release_of("windows-x64.msi", version="0.6.0"), fetched_ms=FETCHED_MS + 2
            )
        },
    )
    page = get_page(client, **WINDOWS_X64)
    assert len(rendered) == 3 and "Version <strong>0.6.0</strong>" in page.html


def test_no_asset_from_elsewhere_and_readable_without_javascript(download_site, client):
    publish_all(download_site)
    page = get_page(client, **WINDOWS_X64)
    for tag, attrs in page.tags:
        assert "src" not in attrs, (tag, attrs)  # no external script, image, frame or font
        if tag == "link":
            assert attrs.get("href") == "data:,", attrs  # only the empty favicon
    assert "url(" not in page.html and "@import" not in page.html
    # The buttons, files and digests are in the HTML itself; the script only adds Copy buttons.
    without_script = re.sub(r"<script>.*?</script>", "", page.html, flags=re.S)
    assert without_script.count("data-main") == 8 and without_script.count("<code data-sha256") >= 20


def test_landmarks_labels_and_unique_ids(download_site, client):
    publish_all(download_site)
    page = get_page(client, **MAC_ARM)
    tags = [tag for tag, _ in page.tags]
    for landmark in ("header", "main", "nav", "footer"):
        assert landmark in tags, landmark
    assert '<html lang="en">' in page.html
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page.html
    assert len(page.ids) == len(set(page.ids))
    assert set(page.labelledby) <= set(page.ids)
    assert '<a class="skip" href="#main">' in page.html
    assert '<nav class="toc" aria-label="Apps">' in page.html


def test_a_site_overrides_any_template(download_site, client, settings, tmp_path: Path):
    templates = tmp_path / "templates" / "craft_apps" / "downloads"
    templates.mkdir(parents=True)
    # Extending the template it replaces, to change one block.
    (templates / "page.html").write_text(
        '{% extends "craft_apps/downloads/page.html" %}'
        "{% block header %}<header>Our own header</header>{% endblock %}"
    )
    (templates / "card.html").write_text(
        '<article data-os="{{ card.os }}">Our card for {{ card.title }}</article>'
    )
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path / "templates"]}]
    publish_all(download_site)
    html = client.get(INDEX).content.decode()
    assert "<header>Our own header</header>" in html and "Craft Apps downloads" not in html
    assert "Our card for Windows" in html and "Download the Craft Apps" in html
