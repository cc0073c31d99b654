"""``link_under``: hostile links a browser would resolve elsewhere are refused; links that land
under the prefix pass, in the form a browser resolves them to."""

from __future__ import annotations

import pytest

from craft_apps.kernel.links import link_under

PREFIX = "https://github.com/storytold/photocraft/releases/download/"
GOOD = f"{PREFIX}v1/f.msi"

HOSTILE = {
    # Dot segments, as the issue found them, and every spelling WHATWG resolves the same way.
    "dot segments": f"{PREFIX}v1/{'../' * 4}evil/x/releases/download/v1/f.msi",
    "%2e%2e": f"{PREFIX}v1/{'%2e%2e/' * 4}evil/x/releases/download/v1/f.msi",
    "%2E%2E": f"{PREFIX}v1/{'%2E%2E/' * 4}evil/x/releases/download/v1/f.msi",
    ".%2e and %2E.": f"{PREFIX}v1/.%2e/%2E./.%2E/%2e./evil/x/releases/download/v1/f.msi",
    "backslashes": f"{PREFIX}v1/" + "..\\" * 4 + "evil\\x\\releases\\download\\v1\\f.msi",
    "mixed slashes and encodings": f"{PREFIX}v1/..\\%2e./.%2E\\%2e%2e/evil/x/releases/download/v1/f.msi",
    "a dot segment at the end": f"{PREFIX}v1/..",
    "climbing to the repository": f"{PREFIX}../../settings",
    "climbing from the host": "https://github.com/../storytold/photocraft/releases/download/../../x/f.msi",
    # Encoded separators: one segment to a browser, a path to a server that decodes first.
    "%2F": f"{PREFIX}v1/..%2F..%2F..%2F..%2Fevil%2Fx%2Freleases%2Fdownload%2Fv1/f.msi",
    "%2f": f"{PREFIX}v1/..%2f..%2f..%2f..%2fevil/f.msi",
    "%5C": f"{PREFIX}v1/..%5C..%5C..%5C..%5Cevil/f.msi",
    "double-encoded dots": f"{PREFIX}v1/{'%252e%252e/' * 4}evil/f.msi",
    "double-encoded slash": f"{PREFIX}v1/..%252F..%252F..%252F..%252Fevil/f.msi",
    "..; path parameter": f"{PREFIX}v1/{'..;/' * 4}evil/f.msi",
    "an encoded NUL": f"{PREFIX}v1/f.msi%00.txt",
    "an empty segment": f"{PREFIX}v1//f.msi",
    "a trailing slash": f"{PREFIX}v1/",
    "nothing under the prefix": PREFIX,
    "the prefix without its slash": PREFIX.rstrip("/"),
    # Other repositories and other pages of this one.
    "another repository": "https://github.com/storytold/other/releases/download/v1/f.msi",
    "a longer repository name": "https://github.com/storytold/photocraft-evil/releases/download/v1/f.msi",
    "a longer folder name": "https://github.com/storytold/photocraft/releases/downloads/v1/f.msi",
    "an encoded repository name": "https://github.com/storytold/photocr%61ft/releases/download/v1/f.msi",
    "another page of the repository": "https://github.com/storytold/photocraft/archive/v1.zip",
    # User info: the host is what follows the last "@" before the path.
    "user info naming github.com": "https://github.com@evil.example/storytold/photocraft/releases/download/v1/f.msi",
    "user info on github.com": "https://user:pw@github.com/storytold/photocraft/releases/download/v1/f.msi",
    "a backslash before @": "https://evil.example\\@github.com/storytold/photocraft/releases/download/v1/f.msi",
    "an encoded @": "https://github.com%40evil.example/storytold/photocraft/releases/download/v1/f.msi",
    # Ports.
    "another port": "https://github.com:8443/storytold/photocraft/releases/download/v1/f.msi",
    "a port past 65535": "https://github.com:70000/storytold/photocraft/releases/download/v1/f.msi",
    "a signed port": "https://github.com:+443/storytold/photocraft/releases/download/v1/f.msi",
    "a port then user info": "https://github.com:443@evil.example/storytold/photocraft/releases/download/v1/f.msi",
    # What WHATWG strips or trims: refused, so that ".<TAB>." can never become "..".
    "tabs in dot segments": f"{PREFIX}v1/" + ".\t./" * 4 + "evil/x/releases/download/v1/f.msi",
    "a newline in a dot segment": f"{PREFIX}v1/.\n./.\r\n./../../evil/f.msi",
    "a newline then another link": f"{GOOD}\nhttps://evil.example/f.msi",
    "a leading space": f" {GOOD}",
    "a trailing newline": f"{GOOD}\n",
    "a NUL": f"{GOOD}\x00",
    "a DEL": f"{PREFIX}v1/f\x7f.msi",
    "a C1 control": f"{PREFIX}v1/f\x85.msi",
    # Scheme and host.
    "uppercase elsewhere": "HTTPS://EVIL.EXAMPLE/storytold/photocraft/releases/download/v1/f.msi",
    "uppercase plain http": "HTTP://GITHUB.COM/storytold/photocraft/releases/download/v1/f.msi",
    "plain http": "http://github.com/storytold/photocraft/releases/download/v1/f.msi",
    "no slashes before another host": "https:evil.example/storytold/photocraft/releases/download/v1/f.msi",
    "three slashes before another host": "https:///evil.example/storytold/photocraft/releases/download/v1/f.msi",
    "backslashes before another host": (
        "https:\\\\evil.example\\storytold\\photocraft\\releases\\download\\v1\\f.msi"
    ),
    "scheme-relative": "//github.com/storytold/photocraft/releases/download/v1/f.msi",
    "a relative path": "storytold/photocraft/releases/download/v1/f.msi",
    "javascript": "javascript:alert(1)//github.com/storytold/photocraft/releases/download/v1/f.msi",
    "another scheme": "ftp://github.com/storytold/photocraft/releases/download/v1/f.msi",
    "a trailing dot on the host": "https://github.com./storytold/photocraft/releases/download/v1/f.msi",
    "an encoded trailing dot": "https://github.com%2e/storytold/photocraft/releases/download/v1/f.msi",
    "an encoded other host": "https://%65vil.example/storytold/photocraft/releases/download/v1/f.msi",
    "a fullwidth host": "https://\uff47\uff49\uff54\uff48\uff55\uff42.com/storytold/photocraft/releases/download/v1/f.msi",
    "a subdomain": "https://github.com.evil.example/storytold/photocraft/releases/download/v1/f.msi",
    "an IPv6 host": "https://[::1]/storytold/photocraft/releases/download/v1/f.msi",
    "an empty host": "https:///storytold/photocraft/releases/download/v1/f.msi",
    # Query and fragment: GitHub's links carry neither.
    "a query holding the real link": f"https://evil.example/x.msi?{GOOD}",
    "a fragment holding the real link": f"https://evil.example/x.msi#{GOOD}",
    "a query": f"{GOOD}?redirect=https://evil.example",
    "an empty query": f"{GOOD}?",
    "a fragment": f"{GOOD}#/../../evil",
    # Not links at all.
    "a malformed escape": f"{PREFIX}v1/f%zz.msi",
    "a lone percent": f"{PREFIX}v1/100%.msi",
    "a quote": f'{PREFIX}v1/f".msi',
    "brackets": f"{PREFIX}v1/f[1].msi",
    "a lone surrogate": f"{PREFIX}v1/f\ud800.msi",
    "empty": "",
    "None": None,
    "a number": 42,
    "a list": [GOOD],
}


@pytest.mark.parametrize("link", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_link_a_browser_resolves_elsewhere_is_refused(link: object) -> None:
    assert link_under(link, PREFIX) is None


VALID = {
    "GitHub's link": (GOOD, GOOD),
    "a tag holding an encoded slash, as GitHub spells it": (
        f"{PREFIX}%40pikku%2Fcli%400.12.105/pikku-darwin-arm64",
        f"{PREFIX}%40pikku%2Fcli%400.12.105/pikku-darwin-arm64",
    ),
    "a tag holding a slash": (f"{PREFIX}release/1.0/f.msi", f"{PREFIX}release/1.0/f.msi"),
    "uppercase scheme and host": (
        "HTTPS://GitHub.COM/storytold/photocraft/releases/download/v1/f.msi",
        GOOD,
    ),
    "the default port": ("https://github.com:443/storytold/photocraft/releases/download/v1/f.msi", GOOD),
    "an encoded host": ("https://git%68ub.com/storytold/photocraft/releases/download/v1/f.msi", GOOD),
    "dot segments that stay inside": (f"{PREFIX}v2/../v1/./f.msi", GOOD),
    "an encoded dot segment that stays inside": (f"{PREFIX}v2/%2E%2e/v1/f.msi", GOOD),
    "backslashes throughout": (
        "https:\\\\github.com\\storytold\\photocraft\\releases\\download\\v1\\f.msi",
        GOOD,
    ),
    "a non-ASCII tag": (f"{PREFIX}v1-β/f.msi", f"{PREFIX}v1-%CE%B2/f.msi"),
    "an encoded non-ASCII tag": (f"{PREFIX}v1-%CE%B2/f.msi", f"{PREFIX}v1-%CE%B2/f.msi"),
    "three dots": (f"{PREFIX}v1/.../f.msi", f"{PREFIX}v1/.../f.msi"),
    "a name starting with two dots": (f"{PREFIX}v1/..f.msi", f"{PREFIX}v1/..f.msi"),
    "an encoded @ in the tag": (f"{PREFIX}%40v1/f.msi", f"{PREFIX}%40v1/f.msi"),
}


@pytest.mark.parametrize(("link", "served"), VALID.values(), ids=VALID.keys())
def test_a_link_under_the_prefix_passes_as_a_browser_resolves_it(link: str, served: str) -> None:
    assert link_under(link, PREFIX) == served


@pytest.mark.parametrize(
    ("web", "link", "served"),
    [
        (
            "http://127.0.0.1:8123",
            "http://127.0.0.1:8123/o/r/releases/download/v1/f.msi",
            "http://127.0.0.1:8123/o/r/releases/download/v1/f.msi",
        ),
        (
            "https://ghe.example/github",
            "https://GHE.example/github/o/r/releases/download/v1/./f.msi",
            "https://ghe.example/github/o/r/releases/download/v1/f.msi",
        ),
    ],
)
def test_the_prefix_may_hold_a_port_and_a_path(web: str, link: str, served: str) -> None:
    assert link_under(link, f"{web}/o/r/releases/download/") == served


@pytest.mark.parametrize(
    ("web", "link"),
    [
        ("http://127.0.0.1:8123", "http://127.0.0.1:8124/o/r/releases/download/v1/f.msi"),
        ("http://127.0.0.1:8123", "http://127.0.0.1/o/r/releases/download/v1/f.msi"),
        ("http://127.0.0.1:8123", "https://127.0.0.1:8123/o/r/releases/download/v1/f.msi"),
        ("https://ghe.example/github", "https://ghe.example/github/../o/r/releases/download/v1/f.msi"),
        ("https://ghe.example/github", "https://ghe.example/o/r/releases/download/v1/f.msi"),
    ],
)
def test_a_configured_prefix_is_kept_to(web: str, link: str) -> None:
    assert link_under(link, f"{web}/o/r/releases/download/") is None


def test_nothing_passes_a_prefix_that_is_no_url() -> None:
    assert link_under(GOOD, "github.com/storytold/photocraft/releases/download/") is None
