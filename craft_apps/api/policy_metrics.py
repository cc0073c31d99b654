"""The metrics of the release policies: each release a policy keeps back, with its percentage
now and its next step, as this web process applies them (what the notices feed last read and the
host's state file, never the database), and each guarded one's install counts (the fleet's, as
the guard reads them; only while a guarded release waits). Part of ``api.metrics``' scrape."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from craft_apps.api.answer import build_release_info
from craft_apps.api.guard_watch import health_of
from craft_apps.api.runtime import runtime
from craft_apps.conf import app_settings
from craft_apps.controls.rules import GUARDED
from craft_apps.host.observe import HostView
from craft_apps.kernel.serving import HostReleases, WaitingRelease, waiting_releases
from craft_apps.kernel.versions import version_text
from craft_apps.reports.counts import ReportsUnavailable
from craft_apps.reports.stores import release_counts

LABELS = ["app", "channel", "tag", "policy"]


def policy_metrics(view: HostView, now_ms: int) -> Iterable[Metric]:
    """``craft_apps_release_waiting`` (1 per release waiting, for approval or the schedule),
    ``craft_apps_release_waiting_percentage`` (a staged one's share now) and
    ``craft_apps_release_waiting_next_step_timestamp_seconds`` with its
    ``…_next_step_percentage``."""
    feed = runtime().feed
    apps, web_url, snapshot = app_settings.APPS, app_settings.GITHUB_WEB_URL, view.snapshot
    listed = build_release_info(apps, snapshot.apps, web_url)
    releases = HostReleases(apps, listed, web_url, snapshot.history, snapshot.history_fetches)
    found = waiting_releases(releases, feed.channel_apps(), feed.controls(), now_ms)
    waiting = GaugeMetricFamily(
        "craft_apps_release_waiting",
        "Releases a release policy keeps back from latest_release, by the policy (staged: "
        "their schedule; approval: an approval).",
        labels=LABELS,
    )
    share = GaugeMetricFamily(
        "craft_apps_release_waiting_percentage",
        "The share of launchers a staged release is offered now (its rollout field).",
        labels=LABELS,
    )
    next_at = GaugeMetricFamily(
        "craft_apps_release_waiting_next_step_timestamp_seconds",
        "When a staged release's percentage moves next on its own.",
        labels=LABELS,
    )
    next_share = GaugeMetricFamily(
        "craft_apps_release_waiting_next_step_percentage",
        "The percentage a staged release moves to at its next step.",
        labels=LABELS,
    )
    for item in found:
        wait = item.wait
        labels = [item.app_key, item.channel.value, wait.release.tag, wait.kind]
        waiting.add_metric(labels, 1)
        if wait.percentage is not None:
            share.add_metric(labels, wait.percentage)
        if wait.next_ms is not None and wait.next_percentage is not None:
            next_at.add_metric(labels, wait.next_ms / 1000)
            next_share.add_metric(labels, wait.next_percentage)
    paused = GaugeMetricFamily(
        "craft_apps_release_guard_paused",
        "1 for a guarded release whose rollout paused itself on its failure share (until resumed).",
        labels=LABELS,
    )
    for item in found:
        if item.wait.paused:
            paused.add_metric([item.app_key, item.channel.value, item.wait.release.tag, item.wait.kind], 1)
    return (waiting, share, next_at, next_share, paused, *guard_counts(found))


def guard_counts(found: list[WaitingRelease]) -> tuple[Metric, ...]:
    """``craft_apps_release_guard_installs`` and ``…_guard_failing_installs`` of each guarded
    release waiting (none when the counts can't be read)."""
    installs = GaugeMetricFamily(
        "craft_apps_release_guard_installs",
        "Distinct installs that reported on a guarded release, fleet-wide (docs/reports.md).",
        labels=LABELS,
    )
    failing = GaugeMetricFamily(
        "craft_apps_release_guard_failing_installs",
        "Distinct installs of a guarded release whose outcome was failed, crashed or rolled_back.",
        labels=LABELS,
    )
    guarded = [item for item in found if item.wait.kind == GUARDED]
    if guarded:
        try:
            counts = health_of(release_counts(sorted({item.app_key for item in guarded})))
        except ReportsUnavailable:
            return (installs, failing)
        for item in guarded:
            tag = item.wait.release.tag
            health = counts.get((item.app_key, version_text(tag) or tag))
            labels = [item.app_key, item.channel.value, tag, GUARDED]
            installs.add_metric(labels, 0 if health is None else health.installs)
            failing.add_metric(labels, 0 if health is None else health.failing)
    return (installs, failing)
