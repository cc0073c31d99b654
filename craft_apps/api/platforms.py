"""Which desktop system a visitor's browser runs on, from the request headers alone.

User-Agent Client Hints come first where the browser sends them: ``Sec-CH-UA-Platform`` on
every request of a Chromium browser, ``Sec-CH-UA-Arch`` and ``Sec-CH-UA-Bitness`` once the site
asked for them (``ACCEPT_CH``, sent with the downloads page). Without hints the User-Agent
decides. A phone, tablet or Chromebook is no desktop: ``Visitor(None, None)``. The CPU stays
None when the headers don't tell it: a Mac's User-Agent says "Intel" on Apple silicon too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from craft_apps.kernel.domain import CraftAppArch, CraftAppOs

# Hints the page asks for, and every header its content depends on.
HINT_HEADERS = ("Sec-CH-UA-Platform", "Sec-CH-UA-Arch", "Sec-CH-UA-Bitness")
ACCEPT_CH = ", ".join(HINT_HEADERS)
VARY = ", ".join((*HINT_HEADERS, "User-Agent"))

_MAX_HEADER_CHARS = 512  # a longer User-Agent is read only this far

_HINTED_OS: dict[str, CraftAppOs | None] = {
    "windows": CraftAppOs.WINDOWS,
    "macos": CraftAppOs.MACOS,
    "linux": CraftAppOs.LINUX,
    "freebsd": CraftAppOs.FREEBSD,
    "android": None,
    "ios": None,
    "chrome os": None,
    "chromeos": None,
}
# User-Agent tokens of systems we have no desktop build for; checked before the desktop ones
# because an Android User-Agent says "Linux" and an iPhone's says "like Mac OS X".
_NOT_DESKTOP = ("Android", "iPhone", "iPad", "iPod", "CrOS", "Mobile")
_UA_OS: tuple[tuple[str, CraftAppOs], ...] = (
    ("Windows", CraftAppOs.WINDOWS),
    ("Macintosh", CraftAppOs.MACOS),
    ("Mac OS X", CraftAppOs.MACOS),
    ("FreeBSD", CraftAppOs.FREEBSD),
    ("Linux", CraftAppOs.LINUX),
    ("X11", CraftAppOs.LINUX),
)
_UA_ARCH: tuple[tuple[str, CraftAppArch], ...] = (
    ("aarch64", CraftAppArch.ARM64),
    ("arm64", CraftAppArch.ARM64),
    ("x86_64", CraftAppArch.X64),
    ("amd64", CraftAppArch.X64),
    ("win64", CraftAppArch.X64),
    ("wow64", CraftAppArch.X64),
    ("x64", CraftAppArch.X64),
    ("i686", CraftAppArch.X86),
    ("i386", CraftAppArch.X86),
)

OS_TITLES: dict[CraftAppOs, str] = {
    CraftAppOs.WINDOWS: "Windows",
    CraftAppOs.MACOS: "macOS",
    CraftAppOs.LINUX: "Linux",
    CraftAppOs.FREEBSD: "FreeBSD",
    CraftAppOs.WEB: "Web browser",
}
ARCH_TITLES: dict[CraftAppArch, str] = {
    CraftAppArch.X64: "x64",
    CraftAppArch.X86: "x86 (32-bit)",
    CraftAppArch.ARM64: "Arm64",
    CraftAppArch.UNIVERSAL: "Universal (Apple silicon and Intel)",
}


@dataclass(frozen=True, slots=True)
class Visitor:
    os: CraftAppOs | None
    arch: CraftAppArch | None

    def describe(self) -> str:
        if self.os is None:
            return ""
        if self.arch is None:
            return OS_TITLES[self.os]
        if self.os is CraftAppOs.MACOS:
            return "macOS on Apple silicon" if self.arch is CraftAppArch.ARM64 else "macOS on Intel"
        return f"{OS_TITLES[self.os]} on {ARCH_TITLES[self.arch]}"


UNKNOWN = Visitor(None, None)


def detect_visitor(meta: Mapping[str, str]) -> Visitor:
    """The visitor's system from a request's ``META`` (``HTTP_SEC_CH_UA_PLATFORM``, ...)."""
    user_agent = meta.get("HTTP_USER_AGENT", "")[:_MAX_HEADER_CHARS]
    platform_hint = _hint(meta.get("HTTP_SEC_CH_UA_PLATFORM")).lower()
    # No hint, "Unknown" or a name we don't know: the User-Agent knows as much.
    os = _HINTED_OS[platform_hint] if platform_hint in _HINTED_OS else _os_from_user_agent(user_agent)
    if os is None:
        return UNKNOWN
    arch = _arch_from_hints(_hint(meta.get("HTTP_SEC_CH_UA_ARCH")), _hint(meta.get("HTTP_SEC_CH_UA_BITNESS")))
    if arch is None and os is not CraftAppOs.MACOS:
        arch = _arch_from_user_agent(user_agent)
    return Visitor(os, arch)


def _hint(value: str | None) -> str:
    """A structured-header string's content: ``"macOS"`` -> ``macOS``."""
    if value is None:
        return ""
    return value[:_MAX_HEADER_CHARS].strip().strip('"').strip()


def _os_from_user_agent(user_agent: str) -> CraftAppOs | None:
    if any(token in user_agent for token in _NOT_DESKTOP):
        return None
    for token, os in _UA_OS:
        if token in user_agent:
            return os
    return None


def _arch_from_hints(arch: str, bitness: str) -> CraftAppArch | None:
    arch = arch.lower()
    if arch == "x86":
        return CraftAppArch.X86 if bitness == "32" else CraftAppArch.X64
    if arch == "arm":
        return None if bitness == "32" else CraftAppArch.ARM64
    return None


def _arch_from_user_agent(user_agent: str) -> CraftAppArch | None:
    lowered = user_agent.lower()
    for token, arch in _UA_ARCH:
        if token in lowered:
            return arch
    return None
