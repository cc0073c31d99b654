"""The demo site's API docs work with no network: Swagger UI and ReDoc come from
drf-spectacular-sidecar through the site itself, ReDoc's page has no Google fonts, and Swagger UI
doesn't show the online validator's badge (an image from validator.swagger.io)."""

from __future__ import annotations

import json
import re

from django.test import Client

from tests.docs_pages import DocsPage, check_offline

SITE = "http://testserver"
SIDECAR = "/static/drf_spectacular_sidecar/"


def fetch_with(client: Client):
    def fetch(path: str) -> tuple[int, bytes]:
        response = client.get(path)
        return response.status_code, response.getvalue()  # WhiteNoise's files are streamed

    return fetch


def swagger_settings(page: DocsPage) -> dict[str, object]:
    [initializer] = [text for text in page.inline if "SwaggerUIBundle(" in text]
    match = re.search(r"const swaggerSettings = (\{.*?\});", initializer, re.DOTALL)
    assert match, initializer
    settings: dict[str, object] = json.loads(match.group(1))
    return settings


def test_swagger_ui_loads_everything_from_the_site(client: Client):
    page = check_offline(fetch_with(client), SITE, "/api/docs/")
    assert {
        f"{SIDECAR}swagger-ui-dist/swagger-ui-bundle.js",
        f"{SIDECAR}swagger-ui-dist/swagger-ui.css",
    } <= set(page.assets)
    assert b"SwaggerUIBundle" in page.assets[f"{SIDECAR}swagger-ui-dist/swagger-ui-bundle.js"]
    assert swagger_settings(page)["validatorUrl"] is None
    assert 'url: "/api/schema/"' in "".join(page.inline)


def test_redoc_loads_everything_from_the_site_without_google_fonts(client: Client):
    page = check_offline(fetch_with(client), SITE, "/api/redoc/")
    assert f"{SIDECAR}redoc/bundles/redoc.standalone.js" in page.assets
    assert 'spec-url="/api/schema/"' in page.html


def test_the_checker_catches_a_page_that_loads_from_a_cdn_or_google_fonts():
    pages = {
        "/cdn/": b'<script src="https://cdn.jsdelivr.net/npm/redoc@latest/bundles/redoc.standalone.js"></script>',
        "/fonts/": b'<link rel="stylesheet" href="/static/site.css"><link href="https://fonts.googleapis.com/css2">',
        "/inline/": b'<script src="/static/app.js"></script><script>fetch("https://validator.swagger.io/v")</script>',
        "/css/": b'<link rel="stylesheet" href="/static/site.css">',
        "/static/site.css": b"body { background: url(https://example.com/bg.png) }",
        "/static/app.js": b"",
    }

    def fetch(path: str) -> tuple[int, bytes]:
        return (200, pages[path]) if path in pages else (404, b"")

    for path, culprit in [
        ("/cdn/", "cdn.jsdelivr.net"),
        ("/fonts/", "fonts.googleapis.com"),
        ("/inline/", "validator.swagger.io"),
        ("/css/", "example.com"),
    ]:
        try:
            check_offline(fetch, SITE, path)
        except AssertionError as caught:
            assert culprit in str(caught), (path, caught)
        else:
            raise AssertionError(f"{path} passed the check")
