"""Debian's Chromium, headless, driven through its chromedriver: how every browser test starts it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WIDTH, HEIGHT = 1280, 900
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
    f"--window-size={WIDTH},{HEIGHT}",
)


def start_chromium(profile: Path, extra_flags: Sequence[str] = (), logs: bool = False) -> webdriver.Chrome:
    """Start a browser with a profile of its own in ``profile``.

    A missing package fails the test, never skips it. With ``logs`` the console and network
    logs are kept, and start empty: the new-tab page's loads are not the site's.
    """
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            pytest.fail(f"{path} is missing: apt-get install {package} (bash .ci/test installs it)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, *extra_flags, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    if logs:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    if logs:
        try:
            driver.get("about:blank")
            driver.get_log("performance")
            driver.get_log("browser")
        except BaseException:
            driver.quit()
            raise
    return driver
