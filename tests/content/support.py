"""Builders and helpers for the notices tests: items at instants relative to a fake clock, a
feed on fake time, a database made unreachable for real, and one look run by a real looker."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from django.db import connection

from craft_apps.content.feed import BackgroundLooker
from craft_apps.content.models import Alert, Announcement, AppRename, RepoRename
from craft_apps.kernel.instants import ms_to_datetime
from craft_apps.testing.clock import START_MS
from tests.support import free_port

NOW = ms_to_datetime(START_MS)  # the fake clock's start
RENAMED_AT = datetime.fromisoformat("2026-09-01T08:00:00.250+00:00")
CREATED_AT = datetime.fromisoformat("2026-09-20T10:30:00+00:00")


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def app_rename(**fields: Any) -> AppRename:
    values: dict[str, Any] = {
        "old_name": "PdfCraft",
        "new_name": "DocuCraft",
        "description": "PdfCraft is now DocuCraft: same app, new name.",
        "renamed_at": RENAMED_AT,
        "published": True,
        "visible_from": ago(3600),
        **fields,
    }
    item: AppRename = AppRename.objects.create(**values)
    return item


def repo_rename(**fields: Any) -> RepoRename:
    values: dict[str, Any] = {
        "old_name": "storytold/pdfcraft",
        "new_name": "storytold/docucraft",
        "renamed_at": None,
        "published": True,
        "visible_from": ago(3600),
        **fields,
    }
    item: RepoRename = RepoRename.objects.create(**values)
    return item


def announcement(**fields: Any) -> Announcement:
    values: dict[str, Any] = {
        "title": "FilmCraft 2 is out",
        "body": "Faster exports.",
        "created_at": CREATED_AT,
        "published": True,
        "visible_from": ago(3600),
        **fields,
    }
    item: Announcement = Announcement.objects.create(**values)
    return item


def alert(**fields: Any) -> Alert:
    values: dict[str, Any] = {
        "title": "PhotoCraft 0.5.0 may lose layers",
        "body": "Update to 0.5.1 before saving.",
        "maybe_web_link": "https://example.com/photocraft-0.5.1",
        "created_at": CREATED_AT,
        "published": True,
        "visible_from": ago(3600),
        **fields,
    }
    item: Alert = Alert.objects.create(**values)
    return item


class Monotonic:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@contextmanager
def database_unreachable() -> Iterator[None]:
    """The default database can't be opened until the block ends: PostgreSQL on a port nothing
    listens on (connection refused), SQLite in a directory that doesn't exist."""
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "postgresql":
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(free_port()))
    else:
        connection.settings_dict["NAME"] = "/nonexistent-craft-apps-dir/notices.sqlite3"
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.update(saved)


WAIT_S = 10  # a bound on a real thread's start, never reached when all is well


def run_once(looker: BackgroundLooker) -> threading.Thread:
    """Hands ``looker`` one look; the thread that ran it."""
    ran: list[threading.Thread] = []
    done = threading.Event()

    def look() -> None:
        ran.append(threading.current_thread())
        done.set()

    looker(look)
    assert done.wait(WAIT_S), "the look ran"
    return ran[0]
