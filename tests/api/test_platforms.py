"""The visitor's system from User-Agent Client Hints, else the User-Agent: one table."""

from __future__ import annotations

import pytest

from craft_apps.api.platforms import UNKNOWN, Visitor, detect_visitor
from craft_apps.kernel.domain import CraftAppArch, CraftAppOs

OS, ARCH = CraftAppOs, CraftAppArch

CHROME_WINDOWS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/130.0.0.0 Safari/537.36"
)
FIREFOX_WINDOWS = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:131.0) Gecko/20100101 Firefox/131.0"
FIREFOX_WINDOWS_32 = "Mozilla/5.0 (Windows NT 10.0; rv:115.0) Gecko/20100101 Firefox/115.0"
FIREFOX_WOW64 = "Mozilla/5.0 (Windows NT 6.1; WOW64; rv:115.0) Gecko/20100101 Firefox/115.0"
CHROME_MAC = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/130.0.0.0 Safari/537.36"
)
SAFARI_MAC = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/18.0 Safari/605.1.15"
)
FIREFOX_LINUX = "Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0"
FIREFOX_UBUNTU_ARM = "Mozilla/5.0 (X11; Ubuntu; Linux aarch64; rv:131.0) Gecko/20100101 Firefox/131.0"
FIREFOX_LINUX_32 = "Mozilla/5.0 (X11; Linux i686; rv:115.0) Gecko/20100101 Firefox/115.0"
FIREFOX_FREEBSD = "Mozilla/5.0 (X11; FreeBSD amd64; rv:131.0) Gecko/20100101 Firefox/131.0"
CHROME_ANDROID = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/130.0.0.0 Mobile Safari/537.36"
)
SAFARI_IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/18.0 Mobile/15E148 Safari/604.1"
)
CHROME_OS = (
    "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/130.0.0.0 Safari/537.36"
)
CURL = "curl/8.5.0"


def meta(
    ua: str | None = None, platform: str | None = None, arch: str | None = None, bitness: str | None = None
):
    headers = {
        "HTTP_USER_AGENT": ua,
        "HTTP_SEC_CH_UA_PLATFORM": platform,
        "HTTP_SEC_CH_UA_ARCH": arch,
        "HTTP_SEC_CH_UA_BITNESS": bitness,
    }
    return {k: v for k, v in headers.items() if v is not None}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        # Client Hints, as Chromium sends them (structured-header strings, quoted).
        (meta(CHROME_WINDOWS, '"Windows"', '"x86"', '"64"'), Visitor(OS.WINDOWS, ARCH.X64)),
        (meta(CHROME_WINDOWS, '"Windows"', '"arm"', '"64"'), Visitor(OS.WINDOWS, ARCH.ARM64)),
        (meta(CHROME_WINDOWS, '"Windows"', '"x86"', '"32"'), Visitor(OS.WINDOWS, ARCH.X86)),
        (meta(CHROME_MAC, '"macOS"', '"arm"', '"64"'), Visitor(OS.MACOS, ARCH.ARM64)),
        (meta(CHROME_MAC, '"macOS"', '"x86"', '"64"'), Visitor(OS.MACOS, ARCH.X64)),
        (meta(CHROME_MAC, '"macOS"'), Visitor(OS.MACOS, None)),  # before the page asked for the CPU
        (meta(FIREFOX_LINUX, '"Linux"', '"arm"'), Visitor(OS.LINUX, ARCH.ARM64)),
        (meta(FIREFOX_LINUX, '"Linux"', '""'), Visitor(OS.LINUX, ARCH.X64)),  # empty hint: the UA
        (meta(CHROME_WINDOWS, '"Windows"', '"arm"', '"32"'), Visitor(OS.WINDOWS, ARCH.X64)),
        # The platform hint wins over the User-Agent; "Unknown" or a new name leaves it to the UA.
        (meta(FIREFOX_LINUX, '"Windows"'), Visitor(OS.WINDOWS, ARCH.X64)),
        (meta(FIREFOX_LINUX, '"Unknown"'), Visitor(OS.LINUX, ARCH.X64)),
        (meta(FIREFOX_FREEBSD, '"FreeBSD"'), Visitor(OS.FREEBSD, ARCH.X64)),
        (meta(CHROME_WINDOWS, '"Fuchsia"'), Visitor(OS.WINDOWS, ARCH.X64)),
        # Phones, tablets and Chromebooks have no desktop build.
        (meta(CHROME_ANDROID, '"Android"'), UNKNOWN),
        (meta(CHROME_OS, '"Chrome OS"'), UNKNOWN),
        # The User-Agent alone.
        (meta(FIREFOX_WINDOWS), Visitor(OS.WINDOWS, ARCH.X64)),
        (meta(FIREFOX_WOW64), Visitor(OS.WINDOWS, ARCH.X64)),
        (meta(FIREFOX_WINDOWS_32), Visitor(OS.WINDOWS, None)),
        (meta(SAFARI_MAC), Visitor(OS.MACOS, None)),  # "Intel" on Apple silicon too: not trusted
        (meta(FIREFOX_LINUX), Visitor(OS.LINUX, ARCH.X64)),
        (meta(FIREFOX_UBUNTU_ARM), Visitor(OS.LINUX, ARCH.ARM64)),
        (meta(FIREFOX_LINUX_32), Visitor(OS.LINUX, ARCH.X86)),
        (meta(FIREFOX_FREEBSD), Visitor(OS.FREEBSD, ARCH.X64)),
        (meta(CHROME_ANDROID), UNKNOWN),
        (meta(SAFARI_IPHONE), UNKNOWN),
        (meta(CHROME_OS), UNKNOWN),
        (meta(CURL), UNKNOWN),
        ({}, UNKNOWN),
        # Nonsense never fails.
        (meta("\x00" * 10_000, '"' * 3, "\ufffd" * 5_000, "64" * 900), UNKNOWN),
    ],
)
def test_detection(headers, expected):
    assert detect_visitor(headers) == expected


def test_descriptions():
    assert Visitor(OS.MACOS, ARCH.ARM64).describe() == "macOS on Apple silicon"
    assert Visitor(OS.MACOS, ARCH.X64).describe() == "macOS on Intel"
    assert Visitor(OS.MACOS, None).describe() == "macOS"
    assert Visitor(OS.WINDOWS, ARCH.X64).describe() == "Windows on x64"
    assert Visitor(OS.LINUX, ARCH.ARM64).describe() == "Linux on Arm64"
    assert UNKNOWN.describe() == ""
