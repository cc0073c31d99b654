"""The downloads page in headless Chromium (Debian's chromium and chromium-driver, via Selenium)
against the demo site under gunicorn, after one poller round against the GitHub stand-in, whose
own URL is the web URL, so every link stays on this machine.

Checked: no console error, every request to 127.0.0.1 (on the downloads page and on both API
docs pages, Swagger UI and ReDoc, once rendered), the "Your system" card for an emulated
Windows/x64 and macOS/arm64 browser, the main button reaching the stand-in's file, no sideways
scrolling at phone width. Screenshots at desktop and phone width go to docs/screenshots/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from craft_apps.testing.fake_github import FakeGitHub
from tests.support import ONE_AT_A_TIME, free_port
from tests.support.chromium import start_chromium

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME]

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
# Three apps keep the poller round short (it waits 1 s between requests).
APPS = (
    "artcraft-launcher=ArtCraft Launcher=storytold/craft-launcher,"
    "photocraft=PhotoCraft=storytold/photocraft,vectorcraft=VectorCraft=storytold/vectorcraft"
)
READY_TIMEOUT_S = 30.0
BRANDS = [{"brand": "Chromium", "version": "130"}, {"brand": "Not?A_Brand", "version": "99"}]
WINDOWS_X64 = {
    "userAgent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/130.0.0.0 Safari/537.36",
    "platform": "Win32",
    "userAgentMetadata": {
        "brands": BRANDS,
        "fullVersionList": BRANDS,
        "platform": "Windows",
        "platformVersion": "15.0.0",
        "architecture": "x86",
        "bitness": "64",
        "model": "",
        "mobile": False,
    },
}
MACOS_ARM64 = {
    "userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/130.0.0.0 Safari/537.36",
    "platform": "MacIntel",
    "userAgentMetadata": {
        "brands": BRANDS,
        "fullVersionList": BRANDS,
        "platform": "macOS",
        "platformVersion": "14.6.0",
        "architecture": "arm",
        "bitness": "64",
        "model": "",
        "mobile": False,
    },
}


@dataclass(frozen=True)
class DemoSite:
    url: str
    github: FakeGitHub

    def file_url(self, repo: str, suffix: str) -> str:
        [asset] = [a for a in self.github.published()[repo]["assets"] if a["name"].endswith(suffix)]
        return str(asset["browser_download_url"])


def _env(github_url: str, workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DJANGO_DB_NAME=str(workdir / "site.sqlite3"),
        CRAFT_APPS_RELEASE_GITHUB_API_URL=github_url,
        CRAFT_APPS_RELEASE_GITHUB_WEB_URL=github_url,
        CRAFT_APPS_RELEASE_APPS=APPS,
        CRAFT_APPS_STATE_DIR=str(workdir / "state"),
        NO_PROXY="127.0.0.1,localhost",
        PYTHONPATH=str(ROOT),
    )
    return env


def _wait_until_served(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"gunicorn exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)  # a starting server, not a timer under test
    pytest.fail(f"the demo site did not answer within {READY_TIMEOUT_S:g} s: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def demo_site() -> Iterator[DemoSite]:
    workdir = Path(tempfile.mkdtemp(prefix="downloads-browser-"))
    port = free_port()
    github = FakeGitHub(port=port, web_url=f"http://127.0.0.1:{port}").start().load_demo()
    env = _env(github.url, workdir)
    site_port = free_port()
    log = workdir / "gunicorn.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", "1", "--bind", f"127.0.0.1:{site_port}",
             "config.wsgi:application"],
            cwd=ROOT, env=env, stdout=output, stderr=output, start_new_session=True,
        )  # fmt: skip
    try:
        poll = subprocess.run(
            [sys.executable, "manage.py", "poll_craft_releases", "--once", "--no-startup-delay"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert poll.returncode == 0, poll.stderr[-2000:]
        site = f"http://127.0.0.1:{site_port}"
        _wait_until_served(f"{site}/craft_apps/downloads/", server, log)
        yield DemoSite(site, github)
    finally:
        server.terminate()
        server.wait(timeout=15)
        github.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    profile = tmp_path / "chromium-profile"
    driver = start_chromium(profile, extra_flags=("--disable-quic", "--hide-scrollbars"), logs=True)
    try:
        yield driver
    finally:
        driver.quit()


def emulate(driver: webdriver.Chrome, override: dict[str, Any]) -> None:
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setUserAgentOverride", override)


def requested_urls(driver: webdriver.Chrome) -> list[str]:
    """Every URL the page asked for since the last call (CDP Network events)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def leaving_the_machine(urls: list[str]) -> list[str]:
    """The URLs that went anywhere but 127.0.0.1 (data: and blob: URLs, the page's own memory, and
    the browser's own pages stay)."""
    return [
        u
        for u in urls
        if urlsplit(u).scheme not in ("data", "blob", "chrome") and urlsplit(u).hostname != "127.0.0.1"
    ]


def console_errors(driver: webdriver.Chrome) -> list[dict[str, Any]]:
    return [entry for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]


def your_system_cards(driver: webdriver.Chrome) -> list[tuple[str, str]]:
    return [
        (
            card.find_element(By.XPATH, "ancestor::section").get_attribute("id") or "",
            card.get_attribute("data-os") or "",
        )
        for card in driver.find_elements(By.CSS_SELECTOR, "article.card.yours")
    ]


def first_cards(driver: webdriver.Chrome) -> list[str]:
    return [
        section.find_element(By.CSS_SELECTOR, "article.card").get_attribute("data-os") or ""
        for section in driver.find_elements(By.CSS_SELECTOR, "section.app")
    ]


def follow_main_button(driver: webdriver.Chrome, site: DemoSite, section: str) -> str:
    button = driver.find_element(By.CSS_SELECTOR, f"#{section} article.yours a[data-main]")
    button.click()
    WebDriverWait(driver, 10).until(lambda d: not d.current_url.startswith(site.url))
    return str(driver.current_url)


def test_windows_x64_gets_its_card_first_and_the_main_button_reaches_the_file(demo_site, browser):
    emulate(browser, WINDOWS_X64)
    browser.get(f"{demo_site.url}/craft_apps/downloads/")
    assert browser.find_element(By.CSS_SELECTOR, ".detected").text == "Your system: Windows on x64"
    sections = ["app-artcraft-launcher", "app-photocraft", "app-vectorcraft"]
    assert [s.get_attribute("id") for s in browser.find_elements(By.CSS_SELECTOR, "section.app")] == sections
    assert your_system_cards(browser) == [(s, "windows") for s in sections]
    assert first_cards(browser) == ["windows"] * 3
    # The copy buttons came from the inline script; nothing else ran.
    assert len(browser.find_elements(By.CSS_SELECTOR, "button.copy")) > 20
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "downloads-desktop.png"))

    urls = requested_urls(browser)
    assert f"{demo_site.url}/craft_apps/downloads/" in urls
    assert leaving_the_machine(urls) == []
    assert console_errors(browser) == []

    demo_site.github.reset_requests()
    landed = follow_main_button(browser, demo_site, "app-artcraft-launcher")
    expected = demo_site.file_url("storytold/craft-launcher", "-windows-x64.msi")
    assert landed == expected and expected.startswith(demo_site.github.url)
    assert "artcraft-launcher-0.6.3-windows-x64.msi: a stand-in for this file" in browser.page_source
    assert [r.status for r in demo_site.github.requests if r.path.endswith("windows-x64.msi")] == [200]
    urls = requested_urls(browser)
    assert expected in urls and leaving_the_machine(urls) == []


def test_macos_arm64_gets_its_card_first_once_the_cpu_hint_arrives(demo_site, browser):
    emulate(browser, MACOS_ARM64)
    page = f"{demo_site.url}/craft_apps/downloads/photocraft/"
    browser.get(page)
    # The first answer asked for the CPU (Accept-CH); the platform hint already told macOS.
    assert your_system_cards(browser) == [("app-artcraft-launcher", "macos"), ("app-photocraft", "macos")]
    browser.get(page)
    assert browser.find_element(By.CSS_SELECTOR, ".detected").text == "Your system: macOS on Apple silicon"
    assert first_cards(browser) == ["macos", "macos"]
    assert your_system_cards(browser) == [("app-artcraft-launcher", "macos"), ("app-photocraft", "macos")]
    assert console_errors(browser) == []
    landed = follow_main_button(browser, demo_site, "app-photocraft")
    assert landed == demo_site.file_url("storytold/photocraft", "-macos-universal.dmg")
    urls = requested_urls(browser)
    assert page in urls and landed in urls and leaving_the_machine(urls) == []


def test_at_phone_width_nothing_scrolls_sideways(demo_site, browser):
    emulate(browser, WINDOWS_X64)
    browser.set_window_size(390, 844)
    browser.get(f"{demo_site.url}/craft_apps/downloads/")
    width, inner = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert inner <= 400 and width <= inner
    button = browser.find_element(By.CSS_SELECTOR, "#app-artcraft-launcher article.yours a[data-main]")
    assert (
        button.is_displayed() and button.rect["x"] >= 0 and button.rect["x"] + button.rect["width"] <= inner
    )
    browser.save_screenshot(str(SCREENSHOTS / "downloads-phone.png"))
    assert console_errors(browser) == []


@pytest.mark.parametrize(
    ("page", "rendered"),
    [
        # Swagger UI: the schema's title, and an operation of each tag.
        ("/api/docs/", "return document.querySelectorAll('.opblock').length"),
        # ReDoc: the operations in the sidebar, and its footer link (whose logo is the CDN's).
        ("/api/redoc/", "return document.querySelectorAll('[data-item-id] label, li[data-item-id]').length"),
    ],
)
def test_the_api_docs_render_and_load_nothing_from_outside(demo_site, browser, page, rendered):
    browser.get(f"{demo_site.url}{page}")
    WebDriverWait(browser, READY_TIMEOUT_S).until(lambda d: d.execute_script(rendered) >= 6)
    WebDriverWait(browser, READY_TIMEOUT_S).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )
    text = browser.find_element(By.TAG_NAME, "body").text
    assert "Craft Apps release info" in text and "health" in text.lower()
    if page == "/api/redoc/":
        assert "API docs by Redocly" in text
        images = browser.execute_script("return [...document.images].map(i => i.getAttribute('src'))")
        assert not any(src and "redoc.ly" in src for src in images), images
    urls = requested_urls(browser)
    assert f"{demo_site.url}{page}" in urls and any("/api/schema/" in u for u in urls), urls
    assert leaving_the_machine(urls) == []
    # Images the page made without a network event (the resource timing list has every fetch).
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert leaving_the_machine(fetched) == []
    assert console_errors(browser) == []
