"""The ``--json`` document of ``craft_apps_status``: what ``ops.status_read`` read, and the host's
state file as ``host.observe`` sees it, as plain JSON-ready data (no I/O here).

Its format is in the docs' operations page (docs/operations.md); health is
``craft_apps.host.health``'s rules, as the health endpoint applies them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from craft_apps.conf import describe
from craft_apps.controls.known_tags import known_tags
from craft_apps.controls.rules import ACTIONS, tag_known
from craft_apps.controls.status import policies_document
from craft_apps.fleet.claims import CLAIM_WINDOW_MS
from craft_apps.host.drops import AUTH, GONE, MOVED
from craft_apps.host.health import HealthPolicy, health_document, health_problems, lease_active
from craft_apps.host.observe import HostView
from craft_apps.kernel.domain import NO_CHANNEL_APPS, AppSpec, AppState, Backoff, Channel, ChannelApps
from craft_apps.kernel.instants import datetime_to_ms, format_ms
from craft_apps.kernel.serving import WaitingRelease
from craft_apps.ops.status_read import ControlsRead, FleetView, Served
from craft_apps.polling.schedule import REFRESH_GAP_MS, due_at_ms, last_answer_ms

FORMAT = 1


def status_document(
    view: HostView,
    fleet: FleetView,
    policy: HealthPolicy,
    apps: Sequence[AppSpec],
    now_ms: int,
    notices: Mapping[str, Any] | None = None,
    host_marks: Mapping[str, int] | None = None,
    channel_apps: ChannelApps | None = NO_CHANNEL_APPS,
    controls: ControlsRead | None = None,
    served: Served | None = None,
    kept: Mapping[str, Any] | None = None,
    waiting: Sequence[WaitingRelease] | None = None,
    cdn_purge: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole status as JSON-ready data (the ``--json`` format, version ``FORMAT``). Each
    optional part is what its reader in ``status_read`` gave (``channel_apps`` from
    ``read_channel_settings``, ``served`` from ``read_served``, ...); None: not read or unknown."""
    counters = view.counters
    document = {
        "format": FORMAT,
        "generated_at": format_ms(now_ms),
        "state_file": {"path": str(view.path), "exists": view.exists, "problem": view.problem},
        "mode": "disabled" if not policy.polling_enabled else counters.mode,
        "apps": _apps(view, fleet, apps, policy, now_ms, host_marks or {}, channel_apps, served),
        "host_backoff": _backoff(view.snapshot.backoff, now_ms),
        "fleet_backoff": None if fleet.backoff is None else _backoff(fleet.backoff, now_ms),
        "lease": _lease(view, now_ms),
        "poller": {"last_tick_at": _instant(counters.tick_ms), "stopped_at": _instant(counters.stopped_ms)},
        "github_quota": _quota(view),
        "github_requests": dict(counters.requests),
        "updater_files": _updater_files(view),
        "redis": _redis(view, fleet),
        "health": health_document(health_problems(view, policy, now_ms)),
        "signing": {"keys": list(policy.signing_keys), "problem": policy.signing_problem},
    }
    if notices is not None:
        document["notices"] = dict(notices)
    if controls is not None:
        document.update(_controls_section(view, apps, controls, waiting, now_ms))
    if kept is not None:
        document["kept_controls"] = dict(kept)
    if cdn_purge is not None:
        document["cdn_purge"] = _cdn_purge(view, cdn_purge)
    return document


def _cdn_purge(view: HostView, setup: Mapping[str, Any]) -> dict[str, Any]:
    """The purge's setup and what the host's pollers counted of it."""
    counters = view.counters
    return {
        **setup,
        **counters.purges,
        "last_purge_at": _instant(counters.purge_ok_ms),
        "last_failure_at": _instant(counters.purge_failed_ms),
        "last_failure": counters.purge_failure,
    }


def _apps(
    view: HostView,
    fleet: FleetView,
    apps: Sequence[AppSpec],
    policy: HealthPolicy,
    now_ms: int,
    host_marks: Mapping[str, int],
    channel_apps: ChannelApps | None,
    served: Served | None,
) -> list[dict[str, Any]]:
    """Each configured app, by key: what the host and the fleet know of it, whether each
    channel chosen per app is on for it (``"beta"``...) and what each channel serves it."""
    return [
        {
            **_app(view, fleet, app, policy, now_ms, host_marks),
            **{
                c.value: None if channel_apps is None else channel_apps.is_on(c, app.key)
                for c in Channel.chosen_per_app()
            },
            "served": None if served is None else served.get(app.key),
        }
        for app in sorted(apps, key=lambda a: a.key)
    ]


def _redis(view: HostView, fleet: FleetView) -> dict[str, Any]:
    """Whether Redis could be read, the poller's count of its trouble and the controls shared."""
    return {
        "configured": fleet.configured,
        "problem": fleet.problem,
        "errors": view.counters.redis_errors,
        "unreadable_keys": view.counters.redis_unreadable,
        "shared_controls": _shared_controls_doc(fleet.controls),
    }


def _controls_section(
    view: HostView,
    apps: Sequence[AppSpec],
    read: ControlsRead,
    waiting: Sequence[WaitingRelease] | None,
    now_ms: int,
) -> dict[str, Any]:
    """The release controls, why they can't be read, the policies and what they keep back."""
    return {
        "release_controls": None if read.problem else _controls(view, apps, read, now_ms),
        "release_controls_problem": read.problem,
        **policies_document(read.controls, waiting),
    }


def _controls(
    view: HostView, apps: Sequence[AppSpec], read: ControlsRead, now_ms: int
) -> list[dict[str, Any]]:
    """Each release control, with its percentage now and its schedule's next step, and whether
    the host knows its app and tag (null: the state file can't be read)."""
    known = None if view.problem is not None else known_tags(view.snapshot)
    configured = {app.key for app in apps}
    found = []
    for control in sorted((c for c in read.controls if c.action in ACTIONS), key=lambda c: c.app_key):
        next_ms = control.next_change_ms(now_ms)
        scheduled = control.kind.scheduled  # a rollout's percentage moves
        found.append(
            {
                "app": control.app_key,
                "action": control.action,
                "tag": control.tag,
                "channel": control.channel or None,  # null: every channel
                "percentage": control.percentage_at(now_ms) if scheduled else None,
                "next_step": None
                if next_ms is None
                else {"at": _instant(next_ms), "percentage": control.percentage_at(next_ms)},
                "paused": control.paused_at_ms is not None,
                "paused_at": _instant(control.paused_at_ms),
                "in_force": control.in_force(now_ms),
                "app_configured": control.app_key in configured,
                "tag_known": None if known is None else tag_known(control, known),
            }
        )
    return found


def _shared_controls_doc(controls: tuple[int, int] | str | None) -> dict[str, Any] | None:
    if controls is None:
        return None
    if isinstance(controls, str):
        return {"controls": None, "read_at": None, "problem": controls}
    count, read_ms = controls
    return {"controls": count, "read_at": _instant(read_ms), "problem": None}


def _lease(view: HostView, now_ms: int) -> dict[str, Any] | None:
    lease = view.lease
    if lease is None:
        return None
    return {
        "holder": lease.holder,
        "fence": lease.fence,
        "expires_at": _instant(lease.expires_ms or None),
        "active": lease_active(view, now_ms),
    }


def _updater_files(view: HostView) -> dict[str, Any]:
    """The reads of releases' Tauri updater files by outcome, their downloads, the last failure."""
    counters = view.counters
    return {
        **counters.updater,
        "downloads": counters.updater_downloads,
        "last_failure": counters.updater_failure,
        "last_failure_at": _instant(counters.updater_failure_ms),
    }


def _quota(view: HostView) -> dict[str, Any] | None:
    quota = view.counters.quota
    if quota is None:
        return None
    return {
        "remaining": quota.remaining,
        "limit": quota.limit,
        "reset_at": _instant(quota.reset_ms),
        "seen_at": _instant(quota.seen_ms),
    }


def _app(
    view: HostView,
    fleet: FleetView,
    app: AppSpec,
    policy: HealthPolicy,
    now_ms: int,
    host_marks: Mapping[str, int],
) -> dict[str, Any]:
    state = view.snapshot.apps.get(app.key)
    release = state.latest_release if state is not None and state.fetched_ms is not None else None
    published = release.published_at if release is not None else None
    requested = _pending_refresh(state, fleet, app.key, host_marks)
    next_due, reason = _next_due(view, fleet, app.key, state, requested, policy, now_ms)
    claim = fleet.claims.get(app.key)
    return {
        "key": app.key,
        "repo": app.repo,
        "tag": release.tag if release is not None else None,
        "published_at": _instant(datetime_to_ms(published)) if published is not None else None,
        "last_fetched_at": _instant(state.fetched_ms if state else None),
        "last_fetched_age_s": _age_s(state.fetched_ms if state else None, now_ms),
        "last_failure_at": _instant(state.failed_ms if state else None),
        "failures": state.failures if state is not None and state.is_failing() else 0,
        "next_due_at": _instant(next_due),
        "next_due_reason": reason,
        "refresh_requested_at": _instant(requested),
        "etag": bool(state is not None and state.etag),
        "history_depth": len(view.snapshot.history.get(app.key, ())),
        "fleet_claim": None
        if claim is None
        else {
            "by": claim.by,
            "at": format_ms(claim.claimed_ms),
            "active": 0 <= now_ms - claim.claimed_ms < CLAIM_WINDOW_MS,
        },
        **_drop_fields(view, app.key),
    }


def _drop_fields(view: HostView, key: str) -> dict[str, Any]:
    """What the poller doesn't serve of the app's release and what GitHub told it
    (``craft_apps.host.drops``): dropped assets by reason, a rename, a 404 after a release, a
    failure for want of credentials GitHub takes (the setting to check, never its value)."""
    rows = [drop for drop in view.drops if drop.app == key]
    moved = next((drop for drop in rows if drop.kind == MOVED), None)
    gone = next((drop for drop in rows if drop.kind == GONE), None)
    auth = next((drop for drop in rows if drop.kind == AUTH), None)
    return {
        "dropped_assets": [
            {
                "reason": drop.kind,
                "count": drop.count,
                "release": drop.release,
                "since": _instant(drop.seen_ms),
            }
            for drop in rows
            if drop.kind not in (MOVED, GONE, AUTH)
        ],
        "moved_to": None if moved is None else moved.detail,
        "gone_since": None if gone is None else _instant(gone.seen_ms),
        "auth_failure": None if auth is None else _auth_failure(auth.detail, auth.seen_ms),
    }


def _auth_failure(setting: str, since_ms: int) -> dict[str, Any]:
    """The setting an authentication failure is about, as a message names it."""
    try:
        named = describe(setting)
    except KeyError:  # a row written by another version: named as it is
        named = setting
    return {"setting": named, "since": _instant(since_ms)}


def _pending_refresh(
    state: AppState | None, fleet: FleetView, key: str, host_marks: Mapping[str, int]
) -> int | None:
    """When a refresh of the app was asked for (a webhook, ``craft_apps_refresh``) that no
    request has answered yet, as far as this host and Redis show; None without one."""
    requested = max(
        (t for t in (host_marks.get(key), fleet.due_marks.get(key)) if t is not None), default=None
    )
    if requested is None:
        return None
    last = _last_request(state, fleet, key)
    return requested if last is None or last < requested else None


def _last_request(state: AppState | None, fleet: FleetView, key: str) -> int | None:
    """The newest sign of a request about the app: the fleet's claim, or its last answer."""
    claim = fleet.claims.get(key)
    times = (claim.claimed_ms if claim else None, last_answer_ms(state) if state else None)
    return max((t for t in times if t is not None), default=None)


def _next_due(
    view: HostView,
    fleet: FleetView,
    key: str,
    state: AppState | None,
    requested: int | None,
    policy: HealthPolicy,
    now_ms: int,
) -> tuple[int | None, str]:
    """When the app is next asked about (None: at the next tick), and why then: "schedule",
    "failure retry", "refresh" (asked for ahead of schedule, no sooner than ``REFRESH_GAP_MS``
    after the last request) or "backoff" (this host's or the fleet's)."""
    due: int | None = None
    reason = "schedule"
    if requested is not None:
        last = _last_request(state, fleet, key)
        due = None if last is None else last + REFRESH_GAP_MS
        reason = "refresh"
    elif state is not None:
        due = due_at_ms(state, policy.interval_ms)
        if (
            state.is_failing()
            and due is not None
            and due == due_at_ms(replace(state, fetched_ms=None), policy.interval_ms)
        ):
            reason = "failure retry"
    else:
        return None, reason
    for backoff in (view.snapshot.backoff, fleet.backoff):
        until = backoff.until_ms if backoff is not None and backoff.is_active(now_ms) else None
        if until is not None and (due is None or until > due):
            due, reason = until, "backoff"
    return (due if due is not None and due > now_ms else None), reason


def _backoff(backoff: Backoff, now_ms: int) -> dict[str, Any]:
    active = backoff.is_active(now_ms)
    return {"until": _instant(backoff.until_ms) if active else None, "trouble": backoff.trouble}


def _instant(ms: int | None) -> str | None:
    try:
        return None if ms is None else format_ms(ms)
    except (OverflowError, ValueError):  # a stored time beyond what a date can hold
        return None


def _age_s(ms: int | None, now_ms: int) -> int | None:
    return None if ms is None else max(0, now_ms - ms) // 1000


# ---- for people ------------------------------------------------------------------------------
