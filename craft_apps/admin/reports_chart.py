"""The admin's "Install reports" page: per app, the new installs of each version per day over the
last ``DAYS`` days and each release's failure share against its guarded policy's threshold, as
SVG drawn here (``chart_svg``) and put inline in the page, so the browser loads nothing else.

The counts are the fleet's (``reports.stores``, as ``craft_apps_status`` reads them); the day
is the runtime's clock's. Users who may view the release policies see it; the policies' list
and the app's index link to it. ``policies`` adds its URL to the policies' admin.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.safestring import SafeString, mark_safe

from craft_apps.admin.chart_svg import ReleaseShare, Series, adoption_svg, failure_svg
from craft_apps.conf import app_settings
from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.controls.rules import GUARDED
from craft_apps.reports.counts import DailyInstalls, ReleaseCounts, ReportsUnavailable, last_days
from craft_apps.reports.stores import daily_installs, release_counts

DAYS = 14
VERSIONS_SHOWN = 7  # per app in the adoption chart; the others are summed as "older"
RELEASES_SHOWN = 8  # per app in the failure chart, newest report first
URL_NAME = "craft_apps_install_reports"


@dataclass(frozen=True)
class AppCharts:
    """One app's two charts (SVG text, safe to put in the page) or why there are none."""

    key: str
    name: str
    adoption: SafeString | None
    failure: SafeString | None
    problem: str | None = None


def adoption_series(found: Sequence[DailyInstalls], days: Sequence[str]) -> list[Series]:
    """The versions with installs in ``days``, newest report first, the ones past
    ``VERSIONS_SHOWN`` summed as "older"."""
    active = [d for d in found if any(d.days.get(day, 0) for day in days)]
    series = [Series(d.version, [d.days.get(day, 0) for day in days]) for d in active[:VERSIONS_SHOWN]]
    rest = active[VERSIONS_SHOWN:]
    if rest:
        series.append(Series("older", [sum(d.days.get(day, 0) for d in rest) for day in days]))
    return series


def thresholds() -> dict[str, float]:
    """Each app's failure threshold: its guarded policies' lowest (the strictest channel's)."""
    found: dict[str, float] = {}
    for row in ReleasePolicy.objects.filter(policy=GUARDED):
        limit = float(row.max_failing_percent)
        found[row.app_key] = min(limit, found.get(row.app_key, limit))
    return found


def shares(found: Sequence[ReleaseCounts], threshold: float | None) -> list[ReleaseShare]:
    return [
        ReleaseShare(c.version, c.installs(), c.failure_share(), threshold) for c in found[:RELEASES_SHOWN]
    ]


def app_charts(now_ms: int, days: int = DAYS) -> list[AppCharts]:
    """Every configured app's charts at ``now_ms``."""
    apps = list(app_settings.APPS)
    keys, window = [a.key for a in apps], last_days(now_ms, days)
    try:
        daily, counts = daily_installs(keys, window), release_counts(keys)
    except ReportsUnavailable as err:
        return [AppCharts(a.key, a.name, None, None, f"the counts can't be read: {err}") for a in apps]
    limits = thresholds()
    charts = []
    for app in apps:
        series = adoption_series([d for d in daily if d.app == app.key], window)
        releases = shares([c for c in counts if c.app == app.key], limits.get(app.key))
        if not releases:
            charts.append(AppCharts(app.key, app.name, None, None, "no install report yet"))
            continue
        adoption = mark_safe(adoption_svg(app.key, window, series))  # built with every text escaped
        charts.append(AppCharts(app.key, app.name, adoption, mark_safe(failure_svg(app.key, releases))))
    return charts


def install_reports_urls(model_admin: Any, now_ms: Callable[[], int]) -> list[URLPattern]:
    """The page's URL under the policies' admin, for users who may view the policies."""

    def view(request: HttpRequest) -> HttpResponse:
        if not model_admin.has_view_permission(request):
            raise PermissionDenied
        context = {
            **model_admin.admin_site.each_context(request),
            "title": f"Install reports: the last {DAYS} days",
            "opts": model_admin.model._meta,
            "charts": app_charts(now_ms()),
            "days": DAYS,
        }
        return TemplateResponse(request, "admin/craft_apps/install_reports.html", context)

    return [path("install-reports/", model_admin.admin_site.admin_view(view), name=URL_NAME)]
