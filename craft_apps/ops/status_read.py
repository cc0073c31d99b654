"""What ``craft_apps_status`` reads, each with a bound; any trouble is reported, never raised.

``read_fleet(keys)`` reads the fleet's Redis with the poller's own client; ``read_notices``,
``read_channel_settings`` and ``read_release_controls`` the site's database, as the web
processes' feed does; ``read_kept_controls`` the controls kept in the state directory;
``read_served`` and ``read_waiting`` what each channel serves and what the policies keep back,
by the endpoint's own rule (``serving``), so the status can't disagree with the answer.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import router
from redis.exceptions import RedisError

from craft_apps.api.answer import build_release_info
from craft_apps.conf import app_settings, purge_backend
from craft_apps.content.channels import read_channel_apps, read_controls
from craft_apps.content.feed import load_scheduled
from craft_apps.content.items import MAX_SERVED_PER_KIND
from craft_apps.content.models import NoticesVersion
from craft_apps.controls.kept import decode as decode_controls
from craft_apps.controls.kept import inspect as inspect_kept_controls
from craft_apps.controls.rules import Control
from craft_apps.fleet import entry as shared_entry
from craft_apps.fleet.connection import describe_error, poller_redis_client
from craft_apps.fleet.due import SharedDueMarks
from craft_apps.fleet.entry import SharedAppEntry
from craft_apps.fleet.errors import RedisTrouble
from craft_apps.fleet.store import SharedStore
from craft_apps.host.due import HostDueMarks
from craft_apps.host.store import StateSnapshot, StateStore, StateUnavailable
from craft_apps.kernel.domain import AppReleaseInfo, Backoff, Channel, ChannelApps, is_stored_time
from craft_apps.kernel.instants import ms_to_datetime
from craft_apps.kernel.serving import HostReleases, WaitingRelease, serve, waiting_releases
from craft_apps.kernel.text import one_line, url_for_log


@dataclass(frozen=True)
class Claim:
    claimed_ms: int
    by: str | None


@dataclass(frozen=True)
class FleetView:
    """What the fleet's Redis holds, or why it couldn't be read."""

    configured: bool
    problem: str | None = None
    entries: Mapping[str, SharedAppEntry | None] = field(default_factory=dict)
    claims: Mapping[str, Claim] = field(default_factory=dict)
    backoff: Backoff | None = None
    due_marks: Mapping[str, int] = field(default_factory=dict)  # refreshes asked for (Unix ms)
    # The release controls a poller shared last: (how many, read at Unix ms), or why they don't
    # read as controls; None when absent.
    controls: tuple[int, int] | str | None = None


def read_host_marks(state_dir: Path) -> dict[str, int]:
    """The refreshes asked for on this host's state file that its poller hasn't taken yet (app
    -> when), read with the state file's short lock wait; none when they can't be read."""
    marks = HostDueMarks(state_dir)
    try:
        return {mark.app: mark.requested_ms for mark in marks.marks()}
    except StateUnavailable:
        return {}
    finally:
        marks.close()


def read_fleet(keys: Sequence[str]) -> FleetView:
    """The fleet's entries, claims and backoff through the poller's Redis alias (its timeouts);
    ``configured`` is False when the host doesn't coordinate."""
    if not app_settings.COORDINATION_ENABLED:
        return FleetView(configured=False)
    client = poller_redis_client(app_settings.REDIS_ALIAS)
    if client is None:
        return FleetView(configured=False)
    store = SharedStore(client, hostname=socket.gethostname(), key_prefix=app_settings.REDIS_KEY_PREFIX)
    try:
        entries, backoff = store.entries.read(keys)
        controls = _shared_controls(store)
        due_marks = SharedDueMarks(client, key_prefix=app_settings.REDIS_KEY_PREFIX).marks()
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.hmget(store.entries.app_key(key), [shared_entry.FIELD_CLAIMED_MS, shared_entry.FIELD_BY])
        replies = pipe.execute()
    except RedisTrouble as err:
        return FleetView(configured=True, problem=str(err))
    except (RedisError, OSError) as err:
        return FleetView(configured=True, problem=f"reading the claims: {describe_error(err)}")
    finally:
        client.close()
    claims = {}
    for key, reply in zip(keys, replies, strict=True):
        claim = _claim(reply)
        if claim is not None:
            claims[key] = claim
    return FleetView(
        configured=True,
        entries=dict(zip(keys, entries, strict=True)),
        claims=claims,
        backoff=backoff,
        due_marks=due_marks,
        controls=controls,
    )


def _shared_controls(store: SharedStore) -> tuple[int, int] | str | None:
    found = store.controls.read(decode_controls)
    if found is None:  # absent, or refused: the store says why
        problems = store.reads.problems(store.controls.key)
        return one_line("; ".join(problems), 300) if problems else None
    controls, read_ms = found
    return len(controls), read_ms


def _claim(reply: object) -> Claim | None:
    if not isinstance(reply, list | tuple) or len(reply) != 2:
        return None
    fields = shared_entry.text_fields(
        {name: value for name, value in zip(("claimed_ms", "by"), reply, strict=True) if value is not None}
    )
    text = fields.get("claimed_ms", "")
    if not text.isdigit() or not is_stored_time(int(text)):
        return None
    return Claim(claimed_ms=int(text), by=fields.get("by") or None)


def read_notices(now_ms: int) -> dict[str, Any]:
    """What the web processes serve as renames and notices now, from the site's database, and
    how many the bound leaves out; any trouble is reported, never raised."""
    now = ms_to_datetime(now_ms)
    try:
        scheduled = load_scheduled(router.db_for_read(NoticesVersion), now)
    except Exception as err:  # the report goes on without them
        return {"problem": one_line(f"{type(err).__name__}: {err}", 300)}
    return {
        "problem": None,
        "served": len(scheduled.served(now)),
        "left_out": scheduled.left_out,
        "max_per_kind": MAX_SERVED_PER_KIND,
    }


def read_channel_settings() -> ChannelApps | None:
    """Which apps each channel chosen per app is on for, from the site's database; None when it
    can't be read (the report says "unknown" rather than fail)."""
    try:
        return read_channel_apps()
    except Exception:  # the notices' problem line already names the database's trouble
        return None


@dataclass(frozen=True)
class ControlsRead:
    """The release controls the site's database holds, or why they can't be read."""

    controls: tuple[Control, ...] = ()
    problem: str | None = None


def read_release_controls() -> ControlsRead:
    """Every release control, from the site's database; any trouble is reported, never raised."""
    try:
        return ControlsRead(read_controls())
    except Exception as err:  # the report goes on without them, and says so
        return ControlsRead(problem=one_line(f"{type(err).__name__}: {err}", 300))


def read_kept_controls(state_dir: Path, database: ControlsRead) -> dict[str, Any]:
    """The file of the controls the web processes last read: how many it holds, whether they
    are the database's (null: the database can't be read), or why it is refused."""
    kept = inspect_kept_controls(state_dir)
    held = kept.controls
    return {
        "path": str(kept.path),
        "exists": kept.exists,
        "controls": None if held is None else len(held),
        "matches_database": None
        if held is None or database.problem is not None
        else sorted(held, key=repr) == sorted(database.controls, key=repr),
        "problem": kept.problem,
    }


Served = dict[str, dict[str, Any]]  # app key -> channel -> what it is served


def read_served(
    store: StateStore, channel_apps: ChannelApps, controls: tuple[Control, ...], now_ms: int
) -> Served:
    """What each channel serves each configured app at ``now_ms`` with the channel settings and
    controls given (the database's now: what the web processes apply within about a second),
    by the endpoint's own rule on what ``store`` holds (as the endpoint, nothing fetched when
    it can't be read)."""
    apps, web_url = app_settings.APPS, app_settings.GITHUB_WEB_URL
    snapshot = _readable(store)
    listed = build_release_info(apps, snapshot.apps, web_url)
    releases = HostReleases(apps, listed, web_url, snapshot.history, snapshot.history_fetches)
    served: Served = {}
    for channel in Channel:
        for key, app in serve(channel, releases, channel_apps, controls, now_ms).apps.items():
            served.setdefault(key, {})[channel.value] = _served(app)
    return served


def _readable(store: StateStore) -> StateSnapshot:
    """What ``store`` holds, or nothing fetched when it can't be read (the endpoint's fallback)."""
    try:
        marker = store.version_marker()
        snapshot = store.read()
        if marker[0] is None or store.file_identity() is None:
            raise store.missing()
    except Exception:  # the status goes on with what the endpoint would serve: nothing fetched
        return StateSnapshot(0)
    return snapshot


def _served(app: AppReleaseInfo) -> dict[str, Any]:
    release, rollout = app.latest_release, app.rollout
    return {
        "tag": None if release is None else release.tag,
        "rollout": None
        if rollout is None
        else {"tag": rollout.release.tag, "percentage": rollout.percentage},
    }


def read_waiting(
    store: StateStore, channel_apps: ChannelApps, controls: tuple[Control, ...], now_ms: int
) -> list[WaitingRelease] | None:
    """The releases the policies keep back at ``now_ms`` (``serving.waiting_releases``) on what
    ``store`` holds; None when it can't be read."""
    apps, web_url = app_settings.APPS, app_settings.GITHUB_WEB_URL
    snapshot = _readable(store)
    if snapshot.version == 0:
        return None
    listed = build_release_info(apps, snapshot.apps, web_url)
    releases = HostReleases(apps, listed, web_url, snapshot.history, snapshot.history_fetches)
    return waiting_releases(releases, channel_apps, controls, now_ms)


def read_cdn_purge() -> dict[str, Any]:
    """How the CDN purge is set up, as the status shows it: never the token, only whether it is
    set; the URL without credentials; the problem that turns it off (a check's id)."""
    resolved = app_settings.cdn_purge_resolved()
    target = resolved.value
    incomplete = [problem.code for problem in resolved.problems if problem.code.startswith("cdn_purge")]
    if target is None:
        kind = "none" if not incomplete else "misconfigured"
        return {
            "kind": kind,
            "method": None,
            "url": None,
            "token": None,
            "problem": incomplete[0] if incomplete else None,
        }
    return {
        "kind": target.kind,
        "method": purge_backend(target.backend).method(target),
        "url": url_for_log(target.url.replace("{path}", "/")),
        "token": "set" if target.token is not None else "not set",
        "problem": None,
    }
