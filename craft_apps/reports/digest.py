"""Keyed hashes of an install's id: what the reports keep instead of the id itself.

The key is derived from Django's ``SECRET_KEY`` (HMAC-SHA256 with a label of our own), so the
hosts of one site, which share it, count an install as the same one, and the hashes can't be
matched with a list of ids without it.
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings

from craft_apps.reports.report import Report

_LABEL = b"craft_apps.reports.install"
DIGEST_CHARS = 32  # 128 bits, as hex


def deployment_key() -> bytes:
    """This site's key for the hashes (read at call time: ``override_settings`` works)."""
    secret = str(getattr(settings, "SECRET_KEY", "") or "").encode("utf-8")
    return hmac.new(secret, _LABEL, hashlib.sha256).digest()


def _digest(key: bytes, *parts: str) -> str:
    message = "\x00".join(parts).encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:DIGEST_CHARS]


def install_digest(key: bytes, report: Report) -> str:
    """The install's hash: what the distinct installs are counted by."""
    return _digest(key, "install", report.install_id)


def release_digest(key: bytes, report: Report) -> str:
    """The hash of the install and the release: at most one counted outcome for each."""
    return _digest(key, "release", report.install_id, report.app, report.version)
