"""What ``craft_apps_status`` shows of the install reports: the counts per app and version as
``release_counts`` reads them, and each guarded release's counts against its policy's rule
(since its last resume, as the guard judges them), as JSON-ready data and as text lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.controls.guard import FAILING, NONE, Health
from craft_apps.controls.rules import GUARDED
from craft_apps.kernel.text import one_line
from craft_apps.kernel.versions import version_text
from craft_apps.reports.counts import KEEP_DAYS, ReleaseCounts, ReportsUnavailable
from craft_apps.reports.report import OUTCOMES
from craft_apps.reports.stores import count_store


def reports_document(
    apps: Sequence[str], waiting: Sequence[Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """Where the counts are, why they couldn't be read, each release's counts, and each of
    the ``waiting`` releases (``controls.status``) a guarded policy holds, with its counts."""
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
        "guarded": guarded_document(waiting or [], None if problem else releases),
    }


def guarded_document(
    waiting: Sequence[Mapping[str, Any]], releases: Sequence[ReleaseCounts] | None
) -> list[dict[str, Any]]:
    """Each guarded release waiting: its percentage, whether paused, and its installs and
    failing ones since its last resume against the rule (None: can't be read)."""
    guarded = [w for w in waiting if w.get("policy") == GUARDED]
    if not guarded:
        return []
    rows, problem = _guarded_rows()
    found = [
        {
            "app": w["app"],
            "channel": w["channel"],
            "tag": w["tag"],
            "percentage": w["percentage"],
            "paused": bool(w.get("paused")),
            **_judged(rows.get((w["app"], w["channel"])), w["tag"], releases),
        }
        for w in guarded
    ]
    return [{**f, "problem": problem} if problem else f for f in found]


def _guarded_rows() -> tuple[dict[tuple[str, str], ReleasePolicy], str | None]:
    try:
        return {(r.app_key, r.channel): r for r in ReleasePolicy.objects.filter(policy=GUARDED)}, None
    except Exception as err:  # the status goes on without the rules, and says why
        return {}, one_line(f"the release policies can't be read: {type(err).__name__}: {err}", 200)


def _judged(row: ReleasePolicy | None, tag: str, releases: Sequence[ReleaseCounts] | None) -> dict[str, Any]:
    version = version_text(tag) or tag
    counted = None if releases is None else next((r for r in releases if r.version == version), None)
    mark = None if row is None else row.marks().get(tag)
    health = None
    if releases is not None:
        now = Health(0, 0) if counted is None else Health(counted.installs(), counted.installs(FAILING))
        health = now.since(NONE if mark is None else mark.base)
    return {
        "installs": None if health is None else health.installs,
        "failing": None if health is None else health.failing,
        "failing_percent": None if health is None else round(health.percent(), 2),
        "min_installs": None if row is None else row.min_installs,
        "max_failing_percent": None if row is None else float(row.max_failing_percent),
    }


def reports_lines(doc: Mapping[str, Any]) -> list[str]:
    """The section as text lines: one per guarded release, one per release, or why there is none."""
    where = "the fleet's Redis" if doc["where"] == "redis" else "this host's state directory"
    head = f"Install reports (in {where}, last {doc['kept_days']} days):"
    guarded = [_guarded_line(g) for g in doc.get("guarded") or []]
    if doc["problem"] is not None:
        return [f"{head} can't be read: {doc['problem']}", *guarded]
    if not doc["releases"]:
        return [f"{head} none", *guarded]
    lines = [head, *guarded]
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


def _guarded_line(item: Mapping[str, Any]) -> str:
    state = "paused by its guard" if item["paused"] else "moving while healthy"
    head = f"  guarded {item['app']} {item['tag']} on {item['channel']} at {item['percentage']} %: {state}"
    if item["installs"] is None:
        return f"{head}; counts unknown"
    rule = ""
    if item["min_installs"] is not None:
        rule = f"; threshold {item['max_failing_percent']:g} % from {item['min_installs']} installs"
    return (
        f"{head}; {item['failing']} of {item['installs']} installs failing "
        f"({item['failing_percent']:.1f} %){rule}"
    )
