"""Helpers that read GitHub's answers safely: bodies capped, headers checked, text made one line.

``read_at_most(response, limit)`` takes a streamed answer and returns its body, or None once it
passes ``limit`` bytes. ``quota_of(headers, now_ms)`` returns the rate-limit headers as a
``GitHubQuota``; ``retry_at_ms(headers, now_ms)`` when a rate-limited request may be retried.
``echo(text, limit, secret)`` returns outside text as one capped line without the secret.
"""

from __future__ import annotations

import json
import re

import requests
from requests.structures import CaseInsensitiveDict

from craft_apps.kernel.domain import GitHubQuota
from craft_apps.kernel.text import one_line

MAX_RETRY_AFTER_SECS = 86_400
MAX_RESET_SECS = 253_402_300_799  # 9999-12-31: a later rate-limit reset is garbage
_CHUNK_BYTES = 64 * 1024
_ERROR_BODY_BYTES = 64 * 1024  # read from a non-200 answer, for its message and connection reuse
_MAX_ETAG_CHARS = 512
_MAX_ECHO_CHARS = 200
_REPO_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_INTEGER = re.compile(r"[+-]?[0-9]{1,20}")
_HEADER_TEXT = re.compile(r"[\x20-\x7e]+")


def read_at_most(response: requests.Response, limit: int) -> bytes | None:
    """The (decoded) body, or None as soon as it passes ``limit`` bytes, without reading further."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_content(chunk_size=_CHUNK_BYTES):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def error_message(response: requests.Response, secret: str | None) -> str:
    """GitHub's ``message`` from a small error body, one line; reading it also frees the connection."""
    try:
        body = read_at_most(response, _ERROR_BODY_BYTES)
        message = json.loads(body)["message"] if body else None
    except Exception:  # an error body is optional decoration; its status already decided the outcome
        return ""
    return echo(message, secret=secret) if isinstance(message, str) else ""


def usable_etag(value: str | None) -> str | None:
    """The ETag stripped, or None if it is too long or not printable header text."""
    if value is None:
        return None
    value = value.strip()
    return value if len(value) <= _MAX_ETAG_CHARS and _HEADER_TEXT.fullmatch(value) else None


def int_header(value: str | None) -> int | None:
    """The header's integer, or None if it is missing or not a plain number."""
    if value is None or not _INTEGER.fullmatch(value.strip()):
        return None
    return int(value)


def quota_of(headers: CaseInsensitiveDict[str], now_ms: int) -> GitHubQuota | None:
    """The answer's rate-limit headers; None unless both the remaining count and the limit
    are there and are sane numbers (a reset that isn't is left out)."""
    remaining = int_header(headers.get("x-ratelimit-remaining"))
    limit = int_header(headers.get("x-ratelimit-limit"))
    if remaining is None or limit is None or not 0 <= remaining <= limit:
        return None
    reset = int_header(headers.get("x-ratelimit-reset"))
    reset_ms = reset * 1000 if reset is not None and 0 < reset < MAX_RESET_SECS else None
    return GitHubQuota(remaining=remaining, limit=limit, reset_ms=reset_ms, seen_ms=now_ms)


def retry_at_ms(headers: CaseInsensitiveDict[str], now_ms: int) -> int | None:
    """When a rate-limited request may be asked again, from ``Retry-After`` or the reset."""
    retry_after = int_header(headers.get("Retry-After"))
    if retry_after is not None:
        return now_ms + min(max(retry_after, 0), MAX_RETRY_AFTER_SECS) * 1000
    reset = int_header(headers.get("x-ratelimit-reset"))
    if reset is not None:
        # A reset in the past means "now"; one absurdly far ahead must not stop polling for good.
        return min(max(reset * 1000, now_ms), now_ms + MAX_RETRY_AFTER_SECS * 1000)
    return None


def is_repo_name(repo: str) -> bool:
    """Whether ``repo`` is a plain ``owner/name``."""
    return bool(_REPO_NAME.fullmatch(repo)) and not any(part in (".", "..") for part in repo.split("/"))


def echo(text: str, limit: int = _MAX_ECHO_CHARS, secret: str | None = None) -> str:
    """Outside text made safe for a reason: no secret, one line of printable characters, capped.

    The secret goes first, so that no cut can leave a piece of it behind.
    """
    if secret:
        text = text.replace(secret, "[token]")
    return one_line(text, limit)
