"""What the endpoint lists: every configured app, merged with what the host knows.

Every configured app is listed; one that was never fetched has no ``latest_release`` and no
``app_last_fetched``. ``last_fetched`` is the oldest ``app_last_fetched``, and None until every
app was fetched (so a cold host's answer is never cached downstream). A stored fetch of another
repository than the app's (``APPS`` changed, the poller not yet run since) is listed as never
fetched: it is never served under the app's repository (``AppState.as_state_of``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from craft_apps.kernel.domain import AppReleaseInfo, AppSpec, AppState, ReleaseInfo
from craft_apps.kernel.instants import ms_to_datetime

RECHECK_S = 0.1  # the endpoint looks at the state file at most this often: a change shows within it


def build_release_info(apps: Iterable[AppSpec], states: Mapping[str, AppState], web_url: str) -> ReleaseInfo:
    listed: dict[str, AppReleaseInfo] = {}
    fetched_times: list[int | None] = []
    for app in sorted(apps, key=lambda spec: spec.key):
        stored = states.get(app.key)
        state = None if stored is None else stored.as_state_of(app.repo, web_url)
        fetched_ms = state.fetched_ms if state else None
        fetched_times.append(fetched_ms)
        listed[app.key] = AppReleaseInfo(
            name=app.name,
            repo=app.repo,
            latest_release=state.latest_release if state and fetched_ms is not None else None,
            app_last_fetched=ms_to_datetime(fetched_ms) if fetched_ms is not None else None,
        )
    return ReleaseInfo(apps=listed, last_fetched=_oldest(fetched_times))


def _oldest(fetched_times: list[int | None]) -> datetime | None:
    known = [t for t in fetched_times if t is not None]
    if not fetched_times or len(known) != len(fetched_times):
        return None
    return ms_to_datetime(min(known))
