"""What ``craft_apps_status`` shows: the host's state file and the fleet's Redis as one document.

``status_document`` builds a plain, JSON-ready dict (the ``--json`` output, its format in the
docs' operations page, docs/operations.md); ``render_text`` lays the same document out for people, so the two
never disagree. Health is ``craft_apps.host.health``'s rules, as the health endpoint applies
them. Redis is read with the poller's own client and timeouts; any trouble there is reported
in the document and never stops the command. ``read_notices`` counts the renames and notices
served now from the site's database, and those the served bound leaves out.

``read_release_controls`` reads the operators' release controls from the site's database
(``notices.channels.read_controls``, as the web processes' feed reads them), and
``read_served`` says what each channel serves each app now with them: it is made by the
endpoint's own ``AnswerCache`` from the host's state file, so the status can't disagree with
the answer about the rule. ``read_kept_controls`` reads the controls the web processes keep in
the state directory (``notices.kept_controls``), as one of them would at its start.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from django.db import router
from redis.exceptions import RedisError

from craft_apps.api.answer_cache import AnswerCache
from craft_apps.api.channels import CHANNELS
from craft_apps.api.controls import known_tags
from craft_apps.api.representation import Refiner
from craft_apps.conf import app_settings
from craft_apps.controls import ROLLOUT, Control
from craft_apps.domain import AppReleaseInfo, AppSpec, AppState, Backoff, is_stored_time
from craft_apps.fleet import entry as shared_entry
from craft_apps.fleet.connection import describe_error, poller_redis_client
from craft_apps.fleet.due import SharedDueMarks
from craft_apps.fleet.entry import SharedAppEntry
from craft_apps.fleet.store import CLAIM_WINDOW_MS, RedisTrouble, SharedStore
from craft_apps.host.drops import GONE, MOVED
from craft_apps.host.due import HostDueMarks
from craft_apps.host.health import HealthPolicy, health_document, health_problems, lease_active
from craft_apps.host.observe import HostView
from craft_apps.host.store import StateStore, StateUnavailable
from craft_apps.instants import datetime_to_ms, format_duration, format_ms, ms_to_datetime, parse_rfc3339
from craft_apps.notices.channels import read_beta_apps, read_controls
from craft_apps.notices.feed import load_scheduled
from craft_apps.notices.items import MAX_SERVED_PER_KIND, NO_NOTICES
from craft_apps.notices.kept_controls import decode as decode_controls
from craft_apps.notices.kept_controls import inspect as inspect_kept_controls
from craft_apps.notices.models import NoticesVersion
from craft_apps.polling.schedule import REFRESH_GAP_MS, due_at_ms, last_answer_ms
from craft_apps.text import one_line

FORMAT = 1


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
        entries, backoff = store.read(keys)
        controls = _shared_controls(store)
        due_marks = SharedDueMarks(client, key_prefix=app_settings.REDIS_KEY_PREFIX).marks()
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.hmget(store.app_key(key), [shared_entry.FIELD_CLAIMED_MS, shared_entry.FIELD_BY])
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
    found = store.read_controls(decode_controls)
    if found is None:  # absent, or refused: the store says why
        problems = store.problems(store.controls_key)
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


def read_beta_channels() -> frozenset[str] | None:
    """The apps whose beta channel is on, from the site's database; None when it can't be read
    (the report says "unknown" rather than fail)."""
    try:
        return read_beta_apps()
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
    store: StateStore, beta: frozenset[str], controls: tuple[Control, ...], now_ms: int
) -> Served:
    """What each channel serves each configured app at ``now_ms`` with the beta settings and
    controls given (the database's now: what the web processes apply within about a second),
    made from ``store`` by the endpoint's own answer cache, so the rule is the endpoint's."""
    cache = AnswerCache(
        lambda _state_dir: store,
        lambda: NO_NOTICES,
        recheck_s=0.0,
        refiner=Refiner(after_s=float("inf")),  # answered once, never refined
        beta_apps=lambda: beta,
        controls=lambda: controls,
        now_ms=lambda: now_ms,
    )
    served: Served = {}
    for channel in CHANNELS:
        for key, app in cache.answer(channel).release_info.apps.items():
            served.setdefault(key, {})[channel] = _served(app)
    return served


def _served(app: AppReleaseInfo) -> dict[str, Any]:
    release, rollout = app.latest_release, app.rollout
    return {
        "tag": None if release is None else release.tag,
        "rollout": None
        if rollout is None
        else {"tag": rollout.release.tag, "percentage": rollout.percentage},
    }


def status_document(
    view: HostView,
    fleet: FleetView,
    policy: HealthPolicy,
    apps: Sequence[AppSpec],
    now_ms: int,
    notices: Mapping[str, Any] | None = None,
    host_marks: Mapping[str, int] | None = None,
    beta: frozenset[str] | None = frozenset(),
    controls: ControlsRead | None = None,
    served: Served | None = None,
    kept: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole status as JSON-ready data (the ``--json`` format, version ``FORMAT``);
    ``host_marks``: the refreshes asked for on the host's state file (``read_host_marks``);
    ``beta``: the apps whose beta channel is on (``read_beta_channels``; None: unknown);
    ``controls``: the release controls (``read_release_controls``; None: not read);
    ``served``: what each channel serves each app (``read_served``; None: unknown);
    ``kept``: the controls kept in the state directory (``read_kept_controls``; None: not read)."""
    counters = view.counters
    problems = health_problems(view, policy, now_ms)
    document = {
        "format": FORMAT,
        "generated_at": format_ms(now_ms),
        "state_file": {"path": str(view.path), "exists": view.exists, "problem": view.problem},
        "mode": "disabled" if not policy.polling_enabled else counters.mode,
        "apps": [
            {
                **_app(view, fleet, app, policy, now_ms, host_marks or {}),
                "beta": None if beta is None else app.key in beta,
                "served": None if served is None else served.get(app.key),
            }
            for app in sorted(apps, key=lambda a: a.key)
        ],
        "host_backoff": _backoff(view.snapshot.backoff, now_ms),
        "fleet_backoff": None if fleet.backoff is None else _backoff(fleet.backoff, now_ms),
        "lease": _lease(view, now_ms),
        "poller": {"last_tick_at": _instant(counters.tick_ms), "stopped_at": _instant(counters.stopped_ms)},
        "github_quota": _quota(view),
        "github_requests": dict(counters.requests),
        "redis": {
            "configured": fleet.configured,
            "problem": fleet.problem,
            "errors": counters.redis_errors,
            "unreadable_keys": counters.redis_unreadable,
            "shared_controls": _shared_controls_doc(fleet.controls),
        },
        "health": health_document(problems),
    }
    if notices is not None:
        document["notices"] = dict(notices)
    if controls is not None:
        document["release_controls"] = None if controls.problem else _controls(view, apps, controls, now_ms)
        document["release_controls_problem"] = controls.problem
    if kept is not None:
        document["kept_controls"] = dict(kept)
    return document


def _controls(
    view: HostView, apps: Sequence[AppSpec], read: ControlsRead, now_ms: int
) -> list[dict[str, Any]]:
    """Each release control, with its percentage now and its schedule's next step, and whether
    the host knows its app and tag (null: the state file can't be read)."""
    known = None if view.problem is not None else known_tags(view.snapshot, listed_only=False)
    configured = {app.key for app in apps}
    found = []
    for control in sorted(read.controls, key=lambda c: c.app_key):
        next_ms = control.next_change_ms(now_ms)
        rollout = control.action == ROLLOUT
        found.append(
            {
                "app": control.app_key,
                "action": control.action,
                "tag": control.tag,
                "channel": control.channel or None,  # null: every channel
                "percentage": control.percentage_at(now_ms) if rollout else None,
                "next_step": None
                if next_ms is None
                else {"at": _instant(next_ms), "percentage": control.percentage_at(next_ms)},
                "paused": control.paused_at_ms is not None,
                "paused_at": _instant(control.paused_at_ms),
                "in_force": control.in_force(now_ms),
                "app_configured": control.app_key in configured,
                "tag_known": None if known is None else control.tag in known.get(control.app_key, ()),
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
    (``craft_apps.host.drops``): dropped assets by reason, a rename, a 404 after a release."""
    rows = [drop for drop in view.drops if drop.app == key]
    moved = next((drop for drop in rows if drop.kind == MOVED), None)
    gone = next((drop for drop in rows if drop.kind == GONE), None)
    return {
        "dropped_assets": [
            {
                "reason": drop.kind,
                "count": drop.count,
                "release": drop.release,
                "since": _instant(drop.seen_ms),
            }
            for drop in rows
            if drop.kind not in (MOVED, GONE)
        ],
        "moved_to": None if moved is None else moved.detail,
        "gone_since": None if gone is None else _instant(gone.seen_ms),
    }


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


def render_text(doc: Mapping[str, Any], now_ms: int) -> str:
    """The document as a table of apps and a list of the host's facts."""
    relative = _Relative(now_ms)
    header = (
        "APP",
        "TAG",
        "PUBLISHED",
        "FETCHED",
        "FAILURES",
        "NEXT DUE",
        "ETAG",
        "HISTORY",
        "FLEET CLAIM",
        "BETA",
    )
    rows = [header]
    for app in doc["apps"]:
        failures = "-"
        if app["failures"]:
            failures = f"{app['failures']} (last {relative.of(app['last_failure_at'])})"
        claim = app["fleet_claim"]
        rows.append(
            (
                app["key"],
                app["tag"] or "-",
                (app["published_at"] or "-")[:10],
                relative.of(app["last_fetched_at"], never="not yet"),
                failures,
                _next_due_text(app, relative),
                "yes" if app["etag"] else "no",
                str(app["history_depth"]),
                "-" if claim is None else f"{claim['by'] or '?'} {relative.of(claim['at'])}",
                {True: "on", False: "off"}.get(app.get("beta"), "unknown"),
            )
        )
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    facts = _facts(doc, relative)
    label_width = max(len(label) for label, _ in facts)
    lines.append("")
    lines += [f"{label.ljust(label_width)}  {value}" for label, value in facts]
    drops = _drop_lines(doc, relative)
    if drops:
        lines += ["", *drops]
    lines += _control_lines(doc, relative)
    return "\n".join(lines) + "\n"


def _control_lines(doc: Mapping[str, Any], relative: _Relative) -> list[str]:
    """The release controls, one a line, and what each channel serves the apps they (or the
    beta channel) touch."""
    controls = doc.get("release_controls")
    if not controls:
        return []
    width = max(len(c["app"]) for c in controls)
    lines = ["", "release controls"]
    lines += [f"  {c['app'].ljust(width)}  {_control_text(c, relative)}" for c in controls]
    touched = {c["app"] for c in controls}
    shown = [a for a in doc["apps"] if a.get("served") and (a["key"] in touched or a.get("beta"))]
    if shown:
        width = max(len(a["key"]) for a in shown)
        lines += ["", "served now"]
        for app in shown:
            channels = "; ".join(f"{name} {_served_text(app['served'][name])}" for name in CHANNELS)
            lines.append(f"  {app['key'].ljust(width)}  {channels}")
        if len(shown) < len(doc["apps"]):
            lines.append("  (every other app: its TAG on every channel)")
    return lines


def _control_text(control: Mapping[str, Any], relative: _Relative) -> str:
    scope = f"on {control['channel']}" if control["channel"] else "every channel"
    text = f"{control['action']} {control['tag']} ({scope})"
    if control["percentage"] is not None:
        text += f" at {control['percentage']} % now"
        step = control["next_step"]
        if step is not None:
            text += f", {step['percentage']} % from {step['at']} ({relative.of(step['at'])})"
        if control["paused"]:
            text += f", paused {relative.of(control['paused_at'], never='')}".rstrip()
        if not control["in_force"]:
            text += ": complete, changes nothing now (delete it when done)"
    if not control["app_configured"]:
        text += f"; no app {control['app']} in APPS: kept, applied when it appears"
    elif control["tag_known"] is False:
        text += "; not known on this host yet: kept, applied when the release appears"
    elif control["tag_known"] is None:
        text += "; unknown whether the host knows the tag (the state file can't be read)"
    return text


def _served_text(served: Mapping[str, Any]) -> str:
    text = served["tag"] or "nothing"
    rollout = served["rollout"]
    if rollout is not None:
        text += f" + rollout {rollout['tag']} to {rollout['percentage']} %"
    return text


def _drop_lines(doc: Mapping[str, Any], relative: _Relative) -> list[str]:
    """One line per thing an app's release lost or GitHub said, each naming what to do."""
    lines = []
    for app in doc["apps"]:
        key, repo = app["key"], app["repo"]
        if app["moved_to"]:
            lines.append(f"{key}: GitHub moved {repo} to {app['moved_to']}: update APPS to it")
        if app["gone_since"]:
            lines.append(
                f"{key}: GitHub answers 404 for {repo} since {relative.of(app['gone_since'])}; "
                f"still serving {app['tag'] or 'the last release'}"
            )
        for drop in app["dropped_assets"]:
            lines.append(
                f"{key}: {drop['count']} assets of {drop['release']} not served ({drop['reason']}, "
                f"since {relative.of(drop['since'])})"
            )
    return lines


def _facts(doc: Mapping[str, Any], relative: _Relative) -> list[tuple[str, str]]:
    return [
        *_poller_facts(doc, relative),
        *_backoff_facts(doc, relative),
        *_github_facts(doc, relative),
        *_health_facts(doc, relative),
    ]


def _poller_facts(doc: Mapping[str, Any], relative: _Relative) -> list[tuple[str, str]]:
    """The state file, the poller's mode and the lease."""
    state_file, poller, lease = doc["state_file"], doc["poller"], doc["lease"]
    facts = [("state file", state_file["path"])]
    if state_file["problem"]:
        facts.append(("", f"unreadable: {state_file['problem']}"))
    mode = doc["mode"] or "unknown (no tick recorded)"
    if poller["last_tick_at"]:
        mode += f", last tick {relative.of(poller['last_tick_at'])}"
    facts.append(("mode", mode))
    if lease is None:
        facts.append(("lease", "never held"))
    else:
        custody = f"{lease['holder']}, fence {lease['fence']}"
        if lease["active"]:
            facts.append(("lease", f"held by {custody}, expires {relative.of(lease['expires_at'])}"))
        else:
            ended = relative.of(lease["expires_at"] or poller["stopped_at"], never="an unknown time")
            facts.append(("lease", f"free since {ended} (last held by {custody})"))
    return facts


def _backoff_facts(doc: Mapping[str, Any], relative: _Relative) -> list[tuple[str, str]]:
    redis = doc["redis"]
    facts = [("host backoff", _backoff_text(doc["host_backoff"], relative))]
    if not redis["configured"]:
        facts.append(("fleet backoff", "- (no Redis: this host polls alone)"))
    elif redis["problem"]:
        facts.append(("fleet backoff", "unknown (Redis can't be read)"))
    else:
        facts.append(("fleet backoff", _backoff_text(doc["fleet_backoff"], relative)))
    return facts


def _github_facts(doc: Mapping[str, Any], relative: _Relative) -> list[tuple[str, str]]:
    """GitHub's quota as last seen, and the poller's requests."""
    facts: list[tuple[str, str]] = []
    quota = doc["github_quota"]
    if quota is None:
        facts.append(("github quota", "not seen yet"))
    else:
        reset = f", resets {relative.of(quota['reset_at'])}" if quota["reset_at"] else ""
        seen = relative.of(quota["seen_at"])
        facts.append(("github quota", f"{quota['remaining']} of {quota['limit']} left{reset} (seen {seen})"))
    requests = doc["github_requests"]
    facts.append(
        (
            "github requests",
            f"{requests['fetched']} fetched, {requests['not_modified']} not modified, "
            f"{requests['failed']} failed, {requests['rate_limited']} rate limited",
        )
    )
    return facts


def _health_facts(doc: Mapping[str, Any], relative: _Relative) -> list[tuple[str, str]]:
    """Redis (and the controls shared there), the notices and the health verdict."""
    redis = doc["redis"]
    if not redis["configured"]:
        reach = "not configured"
    else:
        reach = f"trouble: {redis['problem']}" if redis["problem"] else "reachable"
    refused = redis["unreadable_keys"]
    keys = f", {refused} unreadable {'key' if refused == 1 else 'keys'} refused" if refused else ""
    facts = [("redis", f"{reach}; {redis['errors']} errors{keys} counted by the poller")]
    shared = redis.get("shared_controls")
    if redis["configured"] and not redis["problem"]:
        facts.append(("fleet controls", _shared_controls_text(shared, relative)))
    notices = doc.get("notices")
    if notices is not None:
        facts.append(("notices", _notices_text(notices)))
    if "release_controls" in doc:
        facts.append(("controls", _controls_fact(doc)))
    if "kept_controls" in doc:
        facts.append(("kept controls", _kept_fact(doc["kept_controls"])))
    health = doc["health"]
    facts.append(("health", health["status"]))
    facts += [("", f"{problem['rule']}: {problem['detail']}") for problem in health["problems"]]
    return facts


def _shared_controls_text(shared: Mapping[str, Any] | None, relative: _Relative) -> str:
    if shared is None:
        return "none shared yet (a poller shares what it reads from the site's database)"
    if shared["problem"]:
        return f"unreadable ({shared['problem']})"
    return f"{shared['controls']} shared, read from the site's database {relative.of(shared['read_at'])}"


def _notices_text(notices: Mapping[str, Any]) -> str:
    if notices["problem"]:
        return f"unknown (the site's database can't be read: {notices['problem']})"
    text = f"{notices['served']} renames and notices served now"
    if notices["left_out"]:
        text += (
            f"; {notices['left_out']} more left out by the bound "
            f"({notices['max_per_kind']} of each kind, the newest)"
        )
    return text


def _controls_fact(doc: Mapping[str, Any]) -> str:
    controls = doc["release_controls"]
    if controls is None:
        return (
            f"unknown (the site's database can't be read: {doc['release_controls_problem']}); "
            "the web processes apply the last they read"
        )
    if not controls:
        return "none"
    in_force = sum(c["in_force"] for c in controls)
    unknown = sum(c["tag_known"] is False or not c["app_configured"] for c in controls)
    text = f"{in_force} in force"
    if in_force < len(controls):
        text += f", {len(controls) - in_force} complete"
    return text + (f", {unknown} waiting for their release (below)" if unknown else " (below)")


def _kept_fact(kept: Mapping[str, Any]) -> str:
    if kept["problem"] is not None:
        return (
            f"refused ({kept['problem']}); a web process started while the database can't be "
            "read serves without controls until it can"
        )
    if not kept["exists"]:
        return "no file yet (a web process writes one when it reads a control from the database)"
    text = f"{kept['controls']} in {kept['path']}"
    if kept["matches_database"] is False:
        text += "; not the database's yet (the web processes write them within about a second)"
    return text


def _next_due_text(app: Mapping[str, Any], relative: _Relative) -> str:
    when = relative.of(app["next_due_at"], never="now")
    reason = app.get("next_due_reason", "schedule")
    return when if reason == "schedule" else f"{when} ({reason})"


def _backoff_text(backoff: Mapping[str, Any], relative: _Relative) -> str:
    if backoff["until"] is None:
        return "none"
    until = backoff["until"]
    return f"until {until} ({relative.of(until)}), {backoff['trouble']} troubled rounds in a row"


class _Relative:
    """Instants of the document as "12 s ago" / "in 3 min"."""

    def __init__(self, now_ms: int) -> None:
        self._now_ms = now_ms

    def of(self, instant: str | None, never: str = "-") -> str:
        if instant is None:
            return never
        delta = datetime_to_ms(parse_rfc3339(instant)) - self._now_ms
        return f"in {format_duration(delta)}" if delta > 0 else f"{format_duration(-delta)} ago"
