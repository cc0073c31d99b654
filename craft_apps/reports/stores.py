"""Where the counts are: the fleet's Redis when the host coordinates through it, else this
host's state directory; and ``release_counts``, the one read of them."""

from __future__ import annotations

from collections.abc import Sequence

from craft_apps.conf import app_settings
from craft_apps.fleet.connection import poller_redis_client
from craft_apps.reports.counts import CountStore, DailyInstalls, ReleaseCounts
from craft_apps.reports.file_counts import FileCounts
from craft_apps.reports.redis_counts import RedisCounts


def count_store() -> CountStore:
    """The store the settings name now (read at each call: the writer asks once per batch)."""
    if app_settings.COORDINATION_ENABLED:
        client = poller_redis_client(app_settings.REDIS_ALIAS)
        if client is not None:
            return RedisCounts(client, app_settings.REDIS_KEY_PREFIX)
    return FileCounts(app_settings.STATE_DIR)


def release_counts(apps: Sequence[str] | None = None) -> list[ReleaseCounts]:
    """Fleet-wide counts per app and version (every configured app by default), newest
    reported first per app. Raises ``counts.ReportsUnavailable``."""
    keys = [app.key for app in app_settings.APPS] if apps is None else list(apps)
    return count_store().counts(keys)


def daily_installs(apps: Sequence[str], days: Sequence[str]) -> list[DailyInstalls]:
    """Fleet-wide, each kept version of ``apps`` with the installs first counted for it on each
    of ``days`` (``counts.last_days``). Raises ``counts.ReportsUnavailable``."""
    return count_store().daily(list(apps), list(days))
