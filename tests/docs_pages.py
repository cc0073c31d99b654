"""Proof that an API docs page loads nothing from outside its site, through any HTTP client.

``check_offline(fetch, site, path)`` reads the page, every ``src``/``href`` it references and the
stylesheets' ``url()``s; every reference must stay on ``site`` and answer 200, and no inline
script or style may name another host. ``fetch(path)`` returns ``(status, body)`` (the Django
test client in-process, urllib against a real server).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

Fetch = Callable[[str], tuple[int, bytes]]

# Attributes that make a browser load something (spec-url: ReDoc's element).
LOADING_ATTRIBUTES = {"src", "href", "spec-url", "srcset", "poster", "data"}
# An absolute or protocol-relative URL in script or style text: a host the page might reach.
ABSOLUTE_URL = re.compile(r"""(?:https?:)?//[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::\d+)?""")
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""")
FONT_SERVICES = ("fonts.googleapis.com", "fonts.gstatic.com")


class PageParts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.references: list[str] = []
        self.inline: list[str] = []  # script and style text
        self._in_text_element = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.references += [value for name, value in attrs if name in LOADING_ATTRIBUTES and value]
        self._in_text_element = tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._in_text_element = False

    def handle_data(self, data: str) -> None:
        if self._in_text_element and data.strip():
            self.inline.append(data)


@dataclass
class DocsPage:
    html: str
    inline: list[str]
    assets: dict[str, bytes]  # every referenced path on the site, with its body


def foreign_hosts(text: str, site_host: str) -> list[str]:
    return [url for url in ABSOLUTE_URL.findall(text) if urlsplit(url).netloc != site_host]


def check_offline(fetch: Fetch, site: str, path: str) -> DocsPage:
    site_host = urlsplit(site).netloc
    status, body = fetch(path)
    assert status == 200, (path, status)
    html = body.decode()
    parts = PageParts()
    parts.feed(html)
    assert parts.references, f"{path} references no script or stylesheet"
    for service in FONT_SERVICES:
        assert service not in html, f"{path} loads fonts from {service}"
    for text in parts.inline:
        assert not foreign_hosts(text, site_host), (path, foreign_hosts(text, site_host))
    assets: dict[str, bytes] = {}
    for reference in parts.references:
        if reference.startswith("data:"):
            continue  # in the page itself: nothing is fetched
        url = urlsplit(urljoin(site + path, reference))
        assert (url.scheme, url.netloc) == urlsplit(site)[:2], f"{path} loads {reference} from another site"
        asset_status, asset = fetch(url.path + (f"?{url.query}" if url.query else ""))
        assert asset_status == 200, (reference, asset_status)
        assets[url.path] = asset
        if url.path.endswith(".css"):
            _check_stylesheet(asset.decode(), site + url.path, site)
    return DocsPage(html, parts.inline, assets)


def _check_stylesheet(css: str, css_url: str, site: str) -> None:
    for match in CSS_URL.finditer(css):
        target = match.group(1) or match.group(2)
        if target.startswith("data:"):
            continue
        url = urlsplit(urljoin(css_url, target))
        assert (url.scheme, url.netloc) == urlsplit(site)[:2], f"{css_url} loads {target}"
