"""What ``craft_apps_status`` shows of the install reports: the counts per app and version as
``release_counts`` reads them, as JSON-ready data and as text lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from craft_apps.reports.counts import KEEP_DAYS, ReportsUnavailable
from craft_apps.reports.report import OUTCOMES
from craft_apps.reports.stores import count_store


def reports_document(apps: Sequence[str]) -> dict[str, Any]:
    """Where the counts are, why they couldn't be read, and each release's counts."""
    store = count_store()
    try:
        releases = store.counts(apps)
        problem = None
    except ReportsUnavailable as err:
        releases, problem = [], str(err)
    return {
        "where": store.where,
        "kept_days": KEEP_DAYS,
        "problem": problem,
        "releases": [
            {
                "app": release.app,
                "version": release.version,
                "installs": release.installs(),
                "failure_share": release.failure_share(),
                "outcomes": {
                    o: {"reports": c.reports, "installs": c.installs} for o, c in release.outcomes.items()
                },
            }
            for release in releases
        ],
    }


def reports_lines(doc: Mapping[str, Any]) -> list[str]:
    """The section as text lines: one per release, or why there is none."""
    where = "the fleet's Redis" if doc["where"] == "redis" else "this host's state directory"
    head = f"Install reports (in {where}, last {doc['kept_days']} days):"
    if doc["problem"] is not None:
        return [f"{head} can't be read: {doc['problem']}"]
    if not doc["releases"]:
        return [f"{head} none"]
    lines = [head]
    for release in doc["releases"]:
        outcomes = release["outcomes"]
        parts = ", ".join(f"{o} {outcomes[o]['installs']}" for o in OUTCOMES if o in outcomes)
        reports = sum(outcomes[o]["reports"] for o in outcomes)
        share = release["failure_share"]
        failing = "" if share is None else f", {share:.1%} failing"
        lines.append(
            f"  {release['app']} {release['version']}: {release['installs']} installs ({parts}){failing}; "
            f"{reports} reports"
        )
    return lines
