"""Whether a link from GitHub's answer lies under a prefix of ours, resolved as a browser would.

``link_under(link, prefix)`` returns the link as the WHATWG URL parser resolves it when it lies
under ``prefix``, else None; ``segments_under`` gives its path segments below the prefix. What
parsers disagree on is refused, never repaired. See docs/poller.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
# The ASCII a link may hold; non-ASCII is percent-encoded in the path and refused elsewhere.
_ASCII_ALLOWED = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@%/\\]*")
_HOST = re.compile(r"[a-z0-9.-]+")
_PORT = re.compile(r"[0-9]*")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_SINGLE_DOT = frozenset({".", "%2e"})
_DOUBLE_DOT = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})
_ALL_ASCII = "".join(chr(c) for c in range(0x21, 0x7F))


@dataclass(frozen=True)
class _Resolved:
    scheme: str
    host: str
    port: int | None
    segments: tuple[str, ...]

    def __str__(self) -> str:
        port = "" if self.port is None else f":{self.port}"
        return f"{self.scheme}://{self.host}{port}/{'/'.join(self.segments)}"


def link_under(link: object, prefix: str) -> str | None:
    """``link`` resolved as a browser resolves it, when that lies strictly under ``prefix`` (an
    absolute http(s) URL of ours, e.g. ``https://github.com/org/repo/releases/download/``);
    None otherwise, for anything that is not such a link."""
    found = _under(link, prefix)
    return None if found is None else str(found[0])


def segments_under(link: object, prefix: str) -> tuple[str, ...] | None:
    """The path segments of ``link`` below ``prefix``, judged as ``link_under`` judges (so
    ``owner/repo/releases/tag/v1`` under ``https://github.com/``); None when it isn't under it."""
    found = _under(link, prefix)
    return None if found is None else found[1]


def on_another_host(link: object, prefix: str) -> bool:
    """Whether ``link`` is a link we would read, to another scheme, host or port than ``prefix``'s."""
    base = _resolve(prefix)
    resolved = _resolve(link) if isinstance(link, str) else None
    return (
        base is not None
        and resolved is not None
        and (resolved.scheme, resolved.host, resolved.port) != (base.scheme, base.host, base.port)
    )


def _under(link: object, prefix: str) -> tuple[_Resolved, tuple[str, ...]] | None:
    base = _resolve(prefix)
    if base is None or not isinstance(link, str):
        return None
    base_segments = base.segments[:-1] if base.segments[-1:] == ("",) else base.segments
    resolved = _resolve(link)
    if (
        resolved is None
        or (resolved.scheme, resolved.host, resolved.port) != (base.scheme, base.host, base.port)
        or len(resolved.segments) <= len(base_segments)
        or resolved.segments[: len(base_segments)] != base_segments
        or not all(_is_plain_segment(segment) for segment in resolved.segments)
    ):
        return None
    return resolved, resolved.segments[len(base_segments) :]


def _resolve(text: str) -> _Resolved | None:
    """An absolute http(s) URL as the WHATWG parser resolves it; None for what we refuse."""
    if any(c <= " " or "\x7f" <= c <= "\x9f" for c in text) or _BAD_ESCAPE.search(text):
        return None
    if not _ASCII_ALLOWED.fullmatch("".join(c for c in text if c < "\x7f")):
        return None  # a query, a fragment, brackets, quotes...
    scheme, colon, rest = text.partition(":")
    if not colon or not _SCHEME.fullmatch(scheme) or scheme.lower() not in _DEFAULT_PORTS:
        return None
    scheme = scheme.lower()
    # Special schemes read "\" as "/", and skip every slash before the host.
    authority, _, path = rest.replace("\\", "/").lstrip("/").partition("/")
    if not authority.isascii() or "@" in authority:
        return None
    host_text, _, port_text = authority.partition(":")
    host = unquote(host_text).lower()
    if not _HOST.fullmatch(host) or not _PORT.fullmatch(port_text):
        return None
    port = int(port_text) if port_text else None
    if port is not None and port > 65535:
        return None
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    segments = _path_segments(path)
    return None if segments is None else _Resolved(scheme, host, port, segments)


def _path_segments(path: str) -> tuple[str, ...] | None:
    """The path's segments after dot-segment resolution, non-ASCII percent-encoded as UTF-8."""
    raw = path.split("/")
    segments: list[str] = []
    for index, segment in enumerate(raw):
        last = index == len(raw) - 1
        if segment.lower() in _DOUBLE_DOT:
            if segments:
                segments.pop()
            if last:
                segments.append("")
        elif segment.lower() in _SINGLE_DOT:
            if last:
                segments.append("")
        else:
            try:
                segments.append(quote(segment, safe=_ALL_ASCII, errors="strict"))
            except UnicodeEncodeError:  # a lone surrogate: no URL can carry it
                return None
    return tuple(segments)


def _is_plain_segment(segment: str) -> bool:
    """Neither empty nor, decoded any number of times, a dot segment, a path or a control."""
    decoded = segment
    while True:
        again = unquote(decoded)
        if again == decoded:
            break
        decoded = again
    if any(c < " " or "\x7f" <= c <= "\x9f" for c in decoded):
        return False
    parts = decoded.replace("\\", "/").split("/")
    # "..;x" is ".." to servers that drop path parameters.
    return all(part.split(";", 1)[0] not in ("", ".", "..") for part in parts)
