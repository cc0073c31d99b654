"""``GET``/``HEAD /v1/craft_apps/metrics``: this host's Prometheus metrics, one correct set per host.

``metrics(request)`` answers 404 without ``METRICS_TOKEN``, 401 without ``Authorization: Bearer
<token>`` (compared in constant time, never logged), else 200 with the text exposition of
``registry()``: ``HostCollector`` reads the poller's numbers from the host's state file at each
scrape, and the web workers' own counts are summed through prometheus_client's multiprocess mode.
``registry``'s docstring says which number lives where. See docs/operations.md.
"""

from __future__ import annotations

import hmac
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from craft_apps.api import private_assets
from craft_apps.api.caching import NOT_CACHEABLE
from craft_apps.api.health import host_view, without_body
from craft_apps.api.policy_metrics import policy_metrics
from craft_apps.api.runtime import runtime
from craft_apps.conf import Problem, app_settings
from craft_apps.content import feed as notices_feed
from craft_apps.controls import kept
from craft_apps.controls.known_tags import known_tags
from craft_apps.controls.rules import ACTIONS, Control, tag_known
from craft_apps.host.counters import OUTCOMES, PURGE_OUTCOMES, UPDATER_OUTCOMES
from craft_apps.host.drops import GONE, MOVED
from craft_apps.host.health import (
    REPORTED_RULES,
    HealthPolicy,
    current_policy,
    health_problems,
    lease_active,
)
from craft_apps.host.observe import HostView
from craft_apps.kernel.domain import Channel, PollMode
from craft_apps.kernel.instants import datetime_to_ms
from craft_apps.kernel.source import DROP_REASONS
from craft_apps.reports import meters as report_meters

logger = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
MIN_TOKEN_CHARS = 16
MODES = (*(mode.value for mode in PollMode), "disabled")

# Not registered anywhere at import: a scrape builds the registry it needs (see registry()).
ANSWERS = Counter(
    "craft_apps_endpoint_answers",
    "Answers of GET/HEAD /v1/craft_apps/release_info, by HTTP status and Content-Encoding.",
    ["status", "encoding"],
    registry=None,
)
TAURI_ANSWERS = Counter(
    "craft_apps_tauri_answers",
    "Answers of GET/HEAD /v1/craft_apps/updates/tauri/..., by HTTP status (200: an update, 204: none).",
    ["status"],
    registry=None,
)


def count_answer(response: HttpResponse) -> HttpResponse:
    """Counts one answer of the endpoint; never fails the request (logs once if counting does)."""
    web = runtime()
    try:
        key = (response.status_code, response.get("Content-Encoding"))
        counter = web.answer_counters.get(key)
        if counter is None:  # ``labels`` costs a lock and a lookup: once per status and coding
            counter = web.answer_counters[key] = ANSWERS.labels(str(key[0]), key[1] or "identity")
        counter.inc()
    except Exception as err:  # an unusable PROMETHEUS_MULTIPROC_DIR, for one (check W132)
        _not_counted(err)
    return response


def count_tauri_answer(response: HttpResponse) -> HttpResponse:
    """Counts one answer of the Tauri updater endpoint, as ``count_answer`` counts release_info's."""
    web = runtime()
    try:
        counter = web.tauri_counters.get(response.status_code)
        if counter is None:
            counter = web.tauri_counters[response.status_code] = TAURI_ANSWERS.labels(
                str(response.status_code)
            )
        counter.inc()
    except Exception as err:
        _not_counted(err)
    return response


def _not_counted(err: Exception) -> None:
    """Says once per process that answers can't be counted."""
    web = runtime()
    if not web.counting_failed:
        web.counting_failed = True
        logger.warning("Craft apps metrics: can't count the endpoint's answers: %s", err)


def metrics(request: HttpRequest) -> HttpResponse:
    token = app_settings.METRICS_TOKEN
    if token is None:
        return _plain("Not found.\n", 404)
    if not _authorized(request.META.get("HTTP_AUTHORIZATION", ""), token):
        response = _plain("A bearer token is needed.\n", 401)
        response["WWW-Authenticate"] = 'Bearer realm="craft_apps metrics"'
        return response
    if request.method not in ("GET", "HEAD"):
        response = _plain("Method not allowed.\n", 405)
        response["Allow"] = "GET, HEAD"
        return response
    response = HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = NOT_CACHEABLE
    return without_body(request, response)


def _authorized(header: str, token: str) -> bool:
    scheme, _, given = header.strip().partition(" ")
    # Both sides are compared whole, in constant time, whatever the scheme said.
    matches = hmac.compare_digest(given.strip().encode("utf-8"), token.encode("utf-8"))
    return matches and scheme.lower() == "bearer"


def _plain(text: str, status: int) -> HttpResponse:
    response = HttpResponse(text, status=status, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = NOT_CACHEABLE
    return response


def registry() -> CollectorRegistry:
    """The host's collector, and the answers: summed over every worker's file in multiprocess
    mode, else this process's own counter.

    Two kinds of numbers, two homes, so that whichever web worker answers a scrape shows the same:

    - What the poller knows (GitHub requests by outcome, the last quota, Redis errors and mode, the
      apps' ages and failures, the assets it doesn't serve, the backoff, the lease) lives in the
      host's state file: the poller adds to its counters table after every tick
      (``craft_apps.host.counters``) and to its drops table (``craft_apps.host.drops``), and
      ``HostCollector`` reads the file at each scrape. No poller state lives in a web worker.
      What the web process serves and the release controls it applies (each channel's rollout
      percentage, the controls in force, those naming a tag the host doesn't know, the releases a
      release policy keeps back: ``api.policy_metrics``) are read from the process's own answers,
      the notices feed's last read and the state file, never from the database.
    - The endpoint's answers, and the notices feed's failed reads and left-out items, are counted
      where they happen, in each web worker: with ``PROMETHEUS_MULTIPROC_DIR`` set (the same empty
      directory for every worker of the host) each worker's counts go to a small file there and a
      scrape sums them all, dead workers' included. Without it, each worker shows only its own
      answers, which is right only for a single-process server.
    """
    built = CollectorRegistry()
    built.register(HostCollector())
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        MultiProcessCollector(built, path=directory)  # type: ignore[no-untyped-call]
    else:
        for own in (
            ANSWERS,
            TAURI_ANSWERS,
            notices_feed.LOOK_FAILURES,
            notices_feed.LEFT_OUT,
            kept.FAILURES,
            private_assets.FAILURES,
            report_meters.ANSWERS,
            report_meters.NOT_COUNTED,
            report_meters.COUNTED,
        ):
            built.register(own)
    return built


class HostCollector:
    """Renders the host's state file at each scrape; never raises."""

    def describe(self) -> list[Metric]:
        return []  # the names depend on nothing; no read at registration

    def collect(self) -> Iterator[Metric]:
        view = host_view()
        policy = current_policy()
        now_ms = runtime().clock.now_ms()
        yield _gauge(
            "craft_apps_state_file_readable",
            "1 when the host's state file can be read.",
            int(view.problem is None),
        )
        problems = health_problems(view, policy, now_ms)
        by_rule = GaugeMetricFamily(
            "craft_apps_health_problems", "Problems the health endpoint reports, by rule.", labels=["rule"]
        )
        for rule in REPORTED_RULES:
            by_rule.add_metric([rule], sum(problem.rule == rule for problem in problems))
        yield by_rule
        yield from _channel_metrics(policy.apps)
        yield from _control_metrics(policy.apps, view, now_ms)
        if view.problem is None:
            yield from _poller_metrics(view, policy, now_ms)
            yield from _app_metrics(view, policy, now_ms)


def _channel_metrics(apps: tuple[str, ...]) -> Iterable[Metric]:
    """Each app's setting of each channel chosen per app (``craft_apps_app_beta``...) as the
    web process serves it (the notices feed's last look)."""
    feed = runtime().feed
    feed.current()  # starts a look when one is due, as an answer does; never waits on the database
    channel_apps = feed.channel_apps()
    for channel in Channel.chosen_per_app():
        gauge = GaugeMetricFamily(
            f"craft_apps_app_{channel}",
            f"1 when the app's {channel} channel is on "
            f"(release_info?channel={channel} serves its prereleases).",
            labels=["app"],
        )
        on = channel_apps.apps_on(channel)
        for key in apps:
            gauge.add_metric([key], int(key in on))
        yield gauge


def _control_metrics(apps: tuple[str, ...], view: HostView, now_ms: int) -> Iterable[Metric]:
    """The release controls as this web process applies them: each channel's rollout
    percentage in its answer, the controls in force by app and action (the feed's last look,
    never the database), and those naming a tag the host doesn't know (state file readable)."""
    web = runtime()
    rollout = GaugeMetricFamily(
        "craft_apps_rollout_percentage",
        "The share of launchers offered the app's rollout on the channel, as this worker serves it.",
        labels=["app", "channel"],
    )
    for channel in Channel:
        for key, app in web.answers.answer(channel).release_info.apps.items():
            if app.rollout is not None:
                rollout.add_metric([key, channel.value], app.rollout.percentage)
    yield rollout
    controls = web.feed.controls()
    keys = sorted({*apps, *(c.app_key for c in controls)})
    in_force = GaugeMetricFamily(
        "craft_apps_release_controls",
        "Release controls in force (a rollout below 100 %, a hold, a yank), by app and action.",
        labels=["app", "action"],
    )
    for key in keys:
        for action in ACTIONS:
            in_force.add_metric(
                [key, action],
                sum(c.app_key == key and c.action == action and c.in_force(now_ms) for c in controls),
            )
    yield in_force
    if view.problem is None:
        named = tuple(c for c in controls if c.action in ACTIONS)  # a policy names no tag
        yield _unknown_tag_metric(keys, named, known_tags(view.snapshot))
        yield from policy_metrics(view, now_ms)


def _unknown_tag_metric(
    keys: Iterable[str], controls: tuple[Control, ...], known: dict[str, frozenset[str]]
) -> Metric:
    unknown = GaugeMetricFamily(
        "craft_apps_release_controls_unknown_tag",
        "Release controls naming a tag the host doesn't know of the app (kept, applied when it appears).",
        labels=["app"],
    )
    for key in keys:
        unknown.add_metric([key], sum(c.app_key == key and not tag_known(c, known) for c in controls))
    return unknown


def _poller_metrics(view: HostView, policy: HealthPolicy, now_ms: int) -> Iterable[Metric]:
    yield from _github_metrics(view)
    yield from _mode_metrics(view, policy)
    yield from _lease_metrics(view, now_ms)
    yield from _purge_metrics(view)


def _purge_metrics(view: HostView) -> Iterable[Metric]:
    """The CDN purges of this host's pollers (``craft_apps.cdn``), by outcome."""
    counters = view.counters
    yield _by_outcome(
        "craft_apps_cdn_purges",
        "CDN purge requests of this host's pollers: purged (taken), retried, failed (given up); "
        "unconfirmed: changes purged after the longest wait, not every web process serving them.",
        PURGE_OUTCOMES,
        counters.purges,
    )
    if counters.purge_failed_ms is not None:
        yield _gauge(
            "craft_apps_cdn_purge_last_failure_timestamp_seconds",
            "When a CDN purge was last given up (the answer then aged out).",
            counters.purge_failed_ms / 1000,
        )


def _updater_metrics(view: HostView) -> Iterable[Metric]:
    """The poller's reads of releases' Tauri updater files by outcome, and their downloads."""
    counters = view.counters
    yield _by_outcome(
        "craft_apps_updater_reads",
        "Reads of releases' Tauri updater files (latest.json or .sig files), by outcome.",
        UPDATER_OUTCOMES,
        counters.updater,
    )
    yield CounterMetricFamily(
        "craft_apps_updater_downloads",
        "Downloads of releases' small files (latest.json, .sig) from GitHub's web side.",
        value=counters.updater_downloads,
    )


def _github_metrics(view: HostView) -> Iterable[Metric]:
    """The poller's GitHub requests by outcome, and GitHub's quota as last seen."""
    counters = view.counters
    yield _by_outcome(
        "craft_apps_github_requests",
        "GitHub requests of this host's poller, by outcome.",
        OUTCOMES,
        counters.requests,
    )
    yield from _updater_metrics(view)
    quota = counters.quota
    if quota is None:
        return
    yield _gauge(
        "craft_apps_github_quota_remaining",
        "GitHub requests left in the window, as last seen.",
        quota.remaining,
    )
    yield _gauge(
        "craft_apps_github_quota_limit", "GitHub requests allowed per window, as last seen.", quota.limit
    )
    if quota.reset_ms is not None:
        yield _gauge(
            "craft_apps_github_quota_reset_timestamp_seconds",
            "When GitHub's window resets.",
            quota.reset_ms / 1000,
        )
    yield _gauge(
        "craft_apps_github_quota_seen_timestamp_seconds", "When the quota was seen.", quota.seen_ms / 1000
    )


def _mode_metrics(view: HostView, policy: HealthPolicy) -> Iterable[Metric]:
    """Redis errors, the poller's mode and its last tick."""
    counters = view.counters
    yield CounterMetricFamily(
        "craft_apps_redis_errors",
        "Redis errors of this host's poller (it then polls alone).",
        value=counters.redis_errors,
    )
    yield CounterMetricFamily(
        "craft_apps_redis_unreadable_keys",
        "Redis keys this host's poller refused as not ours (each key and reason once, as logged).",
        value=counters.redis_unreadable,
    )
    mode = "disabled" if not policy.polling_enabled else counters.mode
    modes = GaugeMetricFamily(
        "craft_apps_poller_mode", "1 for the poller's mode at its last tick.", labels=["mode"]
    )
    for name in MODES:
        modes.add_metric([name], int(name == mode))
    yield modes
    if counters.tick_ms is not None:
        yield _gauge(
            "craft_apps_poller_last_tick_timestamp_seconds",
            "When the active poller last ticked.",
            counters.tick_ms / 1000,
        )


def _lease_metrics(view: HostView, now_ms: int) -> Iterable[Metric]:
    """The lease and the backoff."""
    yield _gauge(
        "craft_apps_poller_lease_held",
        "1 while a poller holds this host's lease.",
        int(lease_active(view, now_ms)),
    )
    if view.lease is not None:
        yield _gauge(
            "craft_apps_poller_lease_fence",
            "The lease's fence: it goes up at every change of holder.",
            view.lease.fence,
        )
    backoff = view.snapshot.backoff
    yield _gauge(
        "craft_apps_backoff_until_timestamp_seconds",
        "No GitHub request before this time (0: no backoff).",
        (backoff.until_ms or 0) / 1000,
    )
    yield _gauge(
        "craft_apps_backoff_trouble", "Troubled rounds in a row behind the backoff.", backoff.trouble
    )


def _app_metrics(view: HostView, policy: HealthPolicy, now_ms: int) -> Iterable[Metric]:
    fetch_age = GaugeMetricFamily(
        "craft_apps_app_fetch_age_seconds",
        "Seconds since the app's last fetch or revalidation (+Inf: not fetched yet).",
        labels=["app"],
    )
    release_age = GaugeMetricFamily(
        "craft_apps_app_release_age_seconds",
        "Seconds since the app's latest release was published.",
        labels=["app"],
    )
    failures = GaugeMetricFamily(
        "craft_apps_app_failures_in_a_row",
        "Failed requests in a row for the app (0 when not failing).",
        labels=["app"],
    )
    depth = GaugeMetricFamily(
        "craft_apps_app_history_depth",
        "Releases in the app's history on this host (prereleases included; 0: none known yet).",
        labels=["app"],
    )
    for key in policy.apps:
        depth.add_metric([key], len(view.snapshot.history.get(key, ())))
        state = view.snapshot.apps.get(key)
        fetched_ms = state.fetched_ms if state is not None else None
        fetch_age.add_metric(
            [key], float("inf") if fetched_ms is None else max(0, now_ms - fetched_ms) / 1000
        )
        release = state.latest_release if state is not None else None
        if release is not None and release.published_at is not None:
            release_age.add_metric([key], max(0, now_ms - datetime_to_ms(release.published_at)) / 1000)
        failures.add_metric([key], state.failures if state is not None and state.is_failing() else 0)
    yield from (fetch_age, release_age, failures, depth)
    yield from _drop_metrics(view, policy)


def _drop_metrics(view: HostView, policy: HealthPolicy) -> Iterable[Metric]:
    """What the poller doesn't serve of each app's latest release, and what GitHub told it."""
    dropped = GaugeMetricFamily(
        "craft_apps_app_dropped_assets",
        "Assets of the app's latest release GitHub listed and this host doesn't serve, by reason.",
        labels=["app", "reason"],
    )
    moved = GaugeMetricFamily(
        "craft_apps_app_repository_moved",
        "1 while GitHub redirects the app's configured repository to another one (update APPS).",
        labels=["app"],
    )
    gone = GaugeMetricFamily(
        "craft_apps_app_repository_gone",
        "1 while GitHub answers 404 for the app's repository, which had a release (still served).",
        labels=["app"],
    )
    for key in policy.apps:
        rows = {drop.kind: drop for drop in view.drops if drop.app == key}
        for reason in DROP_REASONS:
            dropped.add_metric([key, reason], rows[reason].count if reason in rows else 0)
        moved.add_metric([key], int(MOVED in rows))
        gone.add_metric([key], int(GONE in rows))
    yield from (dropped, moved, gone)


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _by_outcome(
    name: str, documentation: str, outcomes: Iterable[str], counts: Mapping[str, int]
) -> CounterMetricFamily:
    """A counter with one sample per outcome, zero for an outcome not seen yet."""
    family = CounterMetricFamily(name, documentation, labels=["outcome"])
    for outcome in outcomes:
        family.add_metric([outcome], counts.get(outcome, 0))
    return family


def metrics_problems() -> list[Problem]:
    """What ``manage.py check`` says about the metrics: a short token, an unusable directory."""
    problems: list[Problem] = []
    token = app_settings.METRICS_TOKEN
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        problems.append(Problem("metrics_token_short", {"length": len(token), "minimum": MIN_TOKEN_CHARS}))
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        reason = _unusable(Path(directory))
        if reason is not None:
            problems.append(Problem("metrics_dir_unusable", {"path": directory, "reason": reason}))
    return problems


def _unusable(directory: Path) -> str | None:
    if not directory.is_dir():
        return "is not a directory"
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".check-"):
            pass
    except OSError as err:
        return f"can't be written ({err.strerror or type(err).__name__})"
    return None
