"""The purge thread made from the settings: what it reads, sends with and records to.

It reads the answers through a runtime of its own (``api.runtime.Runtime``: the state file,
the site's database through the notices feed, the same serving rule as the web processes), so
the ETags it compares are the ones launchers get, with the notices version they were made
with; it purges a change once every web process of the host reports serving that version (in the
state directory, ``content.served_versions``) and, with Redis, every other host too
(``fleet_serving``). None when no purge is configured.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path

import redis

from craft_apps.api.caching import CACHEABLE
from craft_apps.api.channels import CHANNELS
from craft_apps.api.runtime import Runtime
from craft_apps.cdn.fleet_serving import FleetServing
from craft_apps.cdn.guard import OnceGuard
from craft_apps.cdn.plan import answer_path
from craft_apps.cdn.purger import LOOK_S, Purger
from craft_apps.cdn.sender import Sender
from craft_apps.conf import app_settings
from craft_apps.content.feed import NoticesFeed
from craft_apps.content.served_versions import ServedReport, read_reports
from craft_apps.fleet.connection import poller_redis_client
from craft_apps.host.counters import CountersUpdate, record
from craft_apps.host.store import StateStore
from craft_apps.kernel.clock import SystemClock


def answer_etags(runtime: Runtime) -> dict[str, str]:
    """Each channel's path and the ETag of its answer (before any signature), if cacheable."""
    found: dict[str, str] = {}
    for channel in CHANNELS:
        answer = runtime.answers.answer(channel)
        if answer.cache_control == CACHEABLE:
            found[answer_path(channel)] = answer.etag
    return found


def purger_from_settings(is_leader: Callable[[], bool]) -> Purger | None:
    """The purge thread of this poller process (not started); None when purge is off."""
    target = app_settings.CDN_PURGE
    if target is None:
        return None
    stop = threading.Event()
    clock = SystemClock(stop)
    # Its feed looks as often as the thread does (a web process's, once a second), so the web
    # processes, not this thread, are what a purge waits for; it reports no version of its own.
    feed = NoticesFeed(recheck_s=LOOK_S, clock=clock, report_served=False)
    runtime = Runtime(clock=clock, feed=feed)
    state_dir = app_settings.STATE_DIR
    store = StateStore(state_dir)
    sender = Sender(target)

    def note(update: CountersUpdate) -> None:
        store.open_for_writing()
        record(store, update)

    def close() -> None:
        sender.close()
        runtime.close()
        store.close()

    fleet = _fleet_serving(state_dir)

    def served(now_ms: int) -> tuple[ServedReport, ...]:
        here = read_reports(state_dir, now_ms)
        return here if fleet is None else here + fleet.others(now_ms)

    def beat(now_ms: int) -> None:
        if fleet is not None:
            fleet.publish(read_reports(state_dir, now_ms), now_ms)

    purger = Purger(
        target,
        answers=lambda: answer_etags(runtime),
        is_leader=is_leader,
        send=sender,
        record=note,
        clock=clock,
        guard=_guard(),
        on_close=close,
        stop=stop,  # stopping ends the clock's sleep at once
        version=runtime.feed.version,
        served=served,
        beat=beat,
    )
    return purger


def _redis() -> redis.Redis | None:
    if not app_settings.COORDINATION_ENABLED:
        return None
    return poller_redis_client(app_settings.REDIS_ALIAS)


def _guard() -> OnceGuard | None:
    client = _redis()
    return None if client is None else OnceGuard(client, app_settings.REDIS_KEY_PREFIX)


def _fleet_serving(state_dir: Path) -> FleetServing | None:
    """This host in the fleet's list of what each serves; named by machine and state directory."""
    client = _redis()
    if client is None:
        return None
    return FleetServing(client, app_settings.REDIS_KEY_PREFIX, f"{socket.gethostname()}:{state_dir}")
