"""Static files in a site made as docs/installation.md says (issue 33 item 2): a new
``startproject`` site with craft_apps, its static files collected and served by WhiteNoise as the
page prints it, under gunicorn with ``DEBUG = False``. In Debian's Chromium, Swagger UI, ReDoc
and the admin's login page render, and every request the browser made was answered below 400
(the browser's own network log). Screenshots go to the test's tmp directory."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.support import ONE_AT_A_TIME, free_port
from tests.support.chromium import start_chromium
from tests.support.new_site import HOST, NewSite, new_site, wait_until_served

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME]

RENDER_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Served:
    site: NewSite
    url: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    site = new_site(tmp_path_factory.mktemp("static") / "site")
    port = free_port()
    log = site.directory / "gunicorn.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", "2", "--bind", f"{HOST}:{port}",
             site.wsgi_application],
            cwd=site.directory, env=site.env, stdout=output, stderr=output, start_new_session=True,
        )  # fmt: skip
    try:
        url = f"http://{HOST}:{port}"
        wait_until_served(f"{url}/v1/craft_apps/release_info", server, log)
        yield Served(site, url)
    finally:
        server.terminate()
        server.wait(timeout=15)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    driver = start_chromium(tmp_path / "chromium-profile", logs=True)
    try:
        yield driver
    finally:
        driver.quit()


def network(driver: webdriver.Chrome) -> dict[str, Any]:
    """Each request since the last call, by id: its URL, its status (None if no answer came) and
    whether loading it failed (CDP Network events from the performance log)."""
    requests: dict[str, Any] = {}
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if "requestId" not in params:
            continue
        request = requests.setdefault(params["requestId"], {"url": "", "status": None, "failed": None})
        if message["method"] == "Network.requestWillBeSent":
            request["url"] = params["request"]["url"]
        elif message["method"] == "Network.responseReceived":
            request["status"] = params["response"]["status"]
        elif message["method"] == "Network.loadingFailed":
            request["failed"] = params["errorText"]
    return requests


def failed_requests(requests: dict[str, Any], site_url: str) -> list[dict[str, Any]]:
    """Those that failed, got no answer or an answer of 400 or more; but the browser's own
    guess at /favicon.ico on a page that names no icon (a startproject site has none)."""
    return [
        r
        for r in requests.values()
        if r["url"].startswith("http")
        and r["url"] != f"{site_url}/favicon.ico"
        and (r["failed"] or not r["status"] or r["status"] >= 400)
    ]


def console_errors(driver: webdriver.Chrome, site_url: str) -> list[dict[str, Any]]:
    """The console's errors, but the one for the browser's guess at /favicon.ico."""
    return [
        entry
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and not entry["message"].startswith(f"{site_url}/favicon.ico ")
    ]


def rendered(driver: webdriver.Chrome, script: str) -> None:
    WebDriverWait(driver, RENDER_TIMEOUT_S).until(lambda d: d.execute_script(script))
    WebDriverWait(driver, RENDER_TIMEOUT_S).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


PAGES = [
    # Swagger UI's element with the schema's operations in it (SwaggerUIBundle ran).
    ("/api/docs/", "return document.querySelectorAll('#swagger-ui .opblock').length >= 6", "/static/"),
    # ReDoc's sidebar with the operations.
    ("/api/redoc/", "return document.querySelectorAll('li[data-item-id]').length >= 6", "/static/"),
    # The admin's stylesheet applied: its header has the admin's colour, not the default none.
    (
        "/admin/login/",
        "const h = document.querySelector('#header');"
        " return h !== null && getComputedStyle(h).backgroundColor !== 'rgba(0, 0, 0, 0)'",
        "/static/admin/css/",
    ),
]


@pytest.mark.parametrize(("page", "script", "static"), PAGES, ids=["swagger-ui", "redoc", "admin"])
def test_the_page_renders_with_every_request_answered(
    served: Served, browser: webdriver.Chrome, tmp_path: Path, page: str, script: str, static: str
):
    browser.get(f"{served.url}{page}")
    rendered(browser, script)
    browser.save_screenshot(str(tmp_path / f"{page.strip('/').replace('/', '-')}.png"))
    requests = network(browser)
    urls = [r["url"] for r in requests.values()]
    assert any(url.startswith(f"{served.url}{static}") for url in urls), urls
    assert failed_requests(requests, served.url) == []
    assert console_errors(browser, served.url) == []


def test_without_the_docs_static_files_step_swagger_ui_is_what_the_issue_saw(served: Served):
    """The same site without WhiteNoise: Swagger UI's file answers 404 with DEBUG off, which the
    step is for (and why the test above could fail)."""
    settings = served.site.directory / "mysite" / "settings.py"
    assert "whitenoise.middleware.WhiteNoiseMiddleware" in settings.read_text()
    done = served.site.run(
        "env",
        f"DJANGO_SETTINGS_MODULE={served.site.settings_module}",
        sys.executable,
        "-c",
        "import django; from django.conf import settings; from django.test import Client;"
        "django.setup();"
        "settings.MIDDLEWARE.remove('whitenoise.middleware.WhiteNoiseMiddleware');"
        f"c = Client(HTTP_HOST='{HOST}');"
        "print(c.get('/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js').status_code)",
    )
    assert done.stdout.split() == ["404"]
