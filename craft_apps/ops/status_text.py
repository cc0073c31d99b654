"""``craft_apps_status``'s text: the document of ``ops.status_document`` laid out for people (a
table of apps, the host's facts, the release controls and policies), so the text and ``--json``
never disagree.
Every unprintable character is written as its escape (``text.escaped``). See docs/operations.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from craft_apps.kernel.domain import Channel
from craft_apps.kernel.instants import datetime_to_ms, format_duration, parse_rfc3339
from craft_apps.kernel.text import escaped
from craft_apps.reports.status import reports_lines


def render_text(doc: Mapping[str, Any], now_ms: int) -> str:
    """The document as a table of apps and a list of the host's facts, each unprintable
    character written as its escape (``text.escaped``)."""
    relative = _Relative(now_ms)
    lines = _app_table(doc, relative)
    facts = _facts(doc, relative)
    label_width = max(len(label) for label, _ in facts)
    lines.append("")
    lines += [f"{label.ljust(label_width)}  {value}" for label, value in facts]
    if "reports" in doc:  # the install reports' counts (reports.status)
        lines += ["", *reports_lines(doc["reports"])]
    drops = _drop_lines(doc, relative)
    if drops:
        lines += ["", *drops]
    lines += _control_lines(doc, relative)
    lines += _policy_lines(doc, relative)
    # What operators typed (a control's tag, an app key) may hold what a terminal acts on.
    return "\n".join(escaped(line) for line in lines) + "\n"


def _app_table(doc: Mapping[str, Any], relative: _Relative) -> list[str]:
    """One row per app, under a header, each column as wide as its widest cell."""
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
        *(c.value.upper() for c in Channel.chosen_per_app()),
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
                *(
                    {True: "on", False: "off"}.get(app.get(c.value), "unknown")
                    for c in Channel.chosen_per_app()
                ),
            )
        )
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(header))]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _control_lines(doc: Mapping[str, Any], relative: _Relative) -> list[str]:
    """The release controls, one a line, and what each channel serves the apps they, a release
    policy or a channel chosen per app touch."""
    controls = doc.get("release_controls") or []
    touched = {c["app"] for c in (*controls, *(doc.get("release_policies") or []))}
    if not touched:
        return []
    lines = []
    if controls:
        width = max(len(c["app"]) for c in controls)
        lines = ["", "release controls"]
        lines += [f"  {c['app'].ljust(width)}  {_control_text(c, relative)}" for c in controls]
    shown = [a for a in doc["apps"] if a.get("served") and (a["key"] in touched or _on_a_chosen_channel(a))]
    if shown:
        width = max(len(a["key"]) for a in shown)
        lines += ["", "served now"]
        for app in shown:
            channels = "; ".join(f"{name} {_served_text(app['served'][name])}" for name in Channel)
            lines.append(f"  {app['key'].ljust(width)}  {channels}")
        if len(shown) < len(doc["apps"]):
            lines.append("  (every other app: its TAG on every channel)")
    return lines


def _on_a_chosen_channel(app: Mapping[str, Any]) -> bool:
    """Whether a channel chosen per app is on for the app, as the document says."""
    return any(app.get(c.value) for c in Channel.chosen_per_app())


def _policy_lines(doc: Mapping[str, Any], relative: _Relative) -> list[str]:
    """Each app's release policy per channel, then each release it keeps back with its next
    step and when."""
    policies = doc.get("release_policies") or []
    if not policies:
        return []
    width = max(len(p["app"]) for p in policies)
    lines = ["", "release policies"]
    for policy in policies:
        text = policy["policy"] + (f" {policy['schedule']}" if policy["schedule"] else "")
        lines.append(f"  {policy['app'].ljust(width)}  {policy['channel']}: {text}, since {policy['since']}")
    waiting = doc.get("waiting_releases")
    lines += ["", "waiting releases"]
    if waiting is None:
        return [*lines, "  unknown (the state file can't be read)"]
    if not waiting:
        return [*lines, "  none"]
    width = max(len(w["app"]) for w in waiting)
    for wait in waiting:
        lines.append(
            f"  {wait['app'].ljust(width)}  {wait['channel']} {wait['tag']}: {_wait_text(wait, relative)}"
        )
    return lines


def _wait_text(wait: Mapping[str, Any], relative: _Relative) -> str:
    if wait["waits_for"] == "approval":
        return "waits for an approval in the admin (the release before stays latest_release)"
    if wait.get("paused"):
        return f"paused by its guard at {wait['percentage']} % (resume or yank it in the admin)"
    text = f"{'guarded' if wait['policy'] == 'guarded' else 'staged'} at {wait['percentage']} % now"
    step = wait["next_step"]
    if step is not None:
        text += f", {step['percentage']} % from {step['at']} ({relative.of(step['at'])})"
    else:
        text += ", no later step: finish it in the admin"
    return text


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
        auth = app.get("auth_failure")
        if auth is not None:
            lines.append(
                f"{key}: GitHub lacks or refuses the credentials for {repo} since "
                f"{relative.of(auth['since'])}: check {auth['setting']} (docs/private.md)"
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
    updater = doc["updater_files"]
    text = (
        f"{updater['fetched']} read, {updater['refused']} with a file refused, {updater['failed']} failed, "
        f"{updater['downloads']} downloads"
    )
    if updater["last_failure"]:
        text += f"; last failure {relative.of(updater['last_failure_at'])}: {updater['last_failure']}"
    facts.append(("updater files", text))
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
    if "signing" in doc:
        facts.append(("signing", _signing_text(doc["signing"])))
    if "cdn_purge" in doc:
        facts.append(("cdn purge", _cdn_purge_text(doc["cdn_purge"], relative)))
    health = doc["health"]
    facts.append(("health", health["status"]))
    facts += [("", f"{problem['rule']}: {problem['detail']}") for problem in health["problems"]]
    return facts


def _cdn_purge_text(purge: Mapping[str, Any], relative: _Relative) -> str:
    """Where purges go (the token only as set or not), what was counted, the last give-up."""
    if purge["kind"] == "none":
        return "off: a change reaches launchers behind a CDN when its copy is due"
    if purge["problem"]:
        return f"off: misconfigured ({purge['problem']}; see manage.py check)"
    setup = f"{purge['kind']} {purge['method']} to {purge['url']} (token {purge['token']})"
    counts = f"{purge['purged']} purged, {purge['retried']} retried, {purge['failed']} given up"
    last = f", last {relative.of(purge['last_purge_at'])}" if purge["last_purge_at"] else ""
    text = f"{setup}; {counts}{last}"
    if purge["last_failure_at"]:
        text += f"; gave up {relative.of(purge['last_failure_at'])}: {purge['last_failure']}"
    return text


def _signing_text(signing: Mapping[str, Any]) -> str:
    """The keys that sign, and a configured key that can't (never a key, only ids)."""
    keys = signing["keys"]
    signs = f"signed by {', '.join(keys)}" if keys else "answers are not signed"
    if signing["problem"]:
        return f"UNUSABLE KEY: {signing['problem']}; {signs}"
    return signs if keys else f"{signs} (no SIGNING_KEY set)"


def _shared_controls_text(shared: Mapping[str, Any] | None, relative: _Relative) -> str:
    if shared is None:
        return (
            "missing from Redis: a host started while the site's database can't be read has none "
            "to apply; every poller that reads the database writes them again at its next tick"
        )
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
