"""The admin's "Install reports" page in Debian's Chromium (headless), against Django's live
server on a state directory of the test's own: the charts are drawn (their bars and threshold
lines have a size on screen) and the page asks for nothing off this machine."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from craft_apps.testing.clock import FakeClock
from tests.content.policy_site import clock_fixture, host_fixture  # noqa: F401 (fixtures)
from tests.content.reports_chart_support import guarded, two_releases
from tests.support import ONE_AT_A_TIME
from tests.support.chromium import start_chromium

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

READY_TIMEOUT_S = 30.0
PASSWORD = "a long password"
PAGE = "/admin/craft_apps/releasepolicy/install-reports/"
SIZES = (
    "return [...document.querySelectorAll(arguments[0])]"
    ".map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })"
)


@pytest.fixture
def browser(
    tmp_path: Path, live_server: Any, host: Path, clock: FakeClock, django_user_model: Any
) -> Iterator[webdriver.Chrome]:
    """Chromium logged in to the admin, photocraft's reports of two releases counted."""
    two_releases(host, clock)
    guarded(2.0)
    django_user_model.objects.create_superuser("operator", "", PASSWORD)
    driver = start_chromium(tmp_path / "chromium-profile", logs=True)
    try:
        driver.get(f"{live_server.url}/admin/login/?next=/admin/")
        driver.find_element(By.NAME, "username").send_keys("operator")
        driver.find_element(By.NAME, "password").send_keys(PASSWORD)
        driver.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
        WebDriverWait(driver, READY_TIMEOUT_S).until(lambda d: d.find_elements(By.ID, "content-main"))
        driver.get_log("performance")
        yield driver
    finally:
        driver.quit()


def requested(driver: webdriver.Chrome) -> list[str]:
    """Every URL the page asked for since the last call (CDP Network events)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def test_the_charts_are_drawn_and_nothing_is_loaded_off_site(
    browser: webdriver.Chrome, live_server: Any, tmp_path: Path
) -> None:
    browser.get(f"{live_server.url}/admin/craft_apps/")
    browser.find_element(By.LINK_TEXT, "Install reports").click()
    WebDriverWait(browser, READY_TIMEOUT_S).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".failure-chart svg")
    )
    assert browser.current_url == f"{live_server.url}{PAGE}"
    path = tmp_path / "install-reports.png"
    assert browser.save_screenshot(str(path))
    bars = browser.execute_script(SIZES, "#reports-photocraft .adoption-bar")
    assert len(bars) == 3 and all(w > 0 and h > 0 for w, h in bars), bars
    shares = browser.execute_script(SIZES, "#reports-photocraft .share-bar")
    assert len(shares) == 2 and all(w > 0 and h > 0 for w, h in shares), shares
    lines = browser.execute_script(SIZES, "#reports-photocraft .threshold")
    assert len(lines) == 2 and all(h > 0 for _, h in lines), lines
    over = browser.execute_script(
        "return getComputedStyle(document.querySelector('#reports-photocraft .share-bar')).fill"
    )
    assert over == "rgb(213, 94, 0)", "0.5.0 at 10 % is over its 2 % threshold"
    urls = requested(browser)
    assert any(u.endswith(PAGE) for u in urls), urls
    site = urlsplit(live_server.url).netloc
    away = [u for u in urls if urlsplit(u).scheme not in ("data", "blob") and urlsplit(u).netloc != site]
    assert away == [], "the page loads nothing from elsewhere"
