"""Whether this host is healthy: the health rules, as pure functions (docs/operations.md).

``health_problems(view, policy, now_ms, rules)`` takes what ``host.observe`` read and returns a
``HealthProblem`` for each broken rule: ``state_file``, ``poller``, ``stale``, ``gone``, and
``signing``. The health endpoint and ``craft_apps_status --check`` both call it, so they agree.
``state_file`` and ``signing`` always apply, whatever the rules asked: a host whose signing key
can't be used must never become ready.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from craft_apps.conf import Problem, app_settings, describe
from craft_apps.host.drops import GONE
from craft_apps.host.observe import HostView
from craft_apps.kernel.instants import format_duration, format_ms
from craft_apps.kernel.signing import MALFORMED, NOT_ED25519

UNUSABLE_KEY = frozenset({MALFORMED, NOT_ED25519})  # the problems of a key that can't be used
RULES = ("state_file", "poller", "stale", "gone")  # the ones ``?rules=`` picks from
REPORTED_RULES = (*RULES, "signing")  # every rule a problem may name (``signing`` always applies)
STALE_MARGIN_MS = 120_000  # four ticks


@dataclass(frozen=True)
class HealthPolicy:
    apps: tuple[str, ...]  # the configured app keys
    interval_ms: int
    takeover_ms: int
    polling_enabled: bool
    signing_problem: str | None = None  # why a configured signing key can't be used (one line)
    signing_keys: tuple[str, ...] = ()  # the ids of the keys that sign

    @property
    def stale_after_ms(self) -> int:
        return 2 * self.interval_ms + STALE_MARGIN_MS


@dataclass(frozen=True)
class HealthProblem:
    rule: str
    detail: str  # one line

    def line(self) -> str:
        return f"{self.rule}: {self.detail}"


def current_policy() -> HealthPolicy:
    """The policy the settings give now."""
    timing = app_settings.LEASE_TIMING
    signing = app_settings.signing_resolved()
    return HealthPolicy(
        apps=tuple(app.key for app in app_settings.APPS),
        interval_ms=app_settings.POLL_INTERVAL_SECS * 1000,
        takeover_ms=timing.ttl_ms + timing.retry_ms,
        polling_enabled=app_settings.POLLING_ENABLED,
        signing_problem=unusable_key_problem(signing.problems),
        signing_keys=() if signing.value is None else tuple(key.key_id for key in signing.value.keys),
    )


def unusable_key_problem(problems: Iterable[Problem]) -> str | None:
    """One line naming each configured signing key that can't be used and why (never the key);
    None when every configured key is usable."""
    found = [
        f"{describe(problem.details['key'])} is not a usable Ed25519 private key "
        f"({problem.details['reason']})"
        for problem in problems
        if problem.code in UNUSABLE_KEY
    ]
    if not found:
        return None
    return "; ".join(found) + ": launchers that pin it refuse every answer"


def parse_rules(names: Iterable[str]) -> tuple[str, ...]:
    """The named rules in their usual order; all of them for none. Raises ValueError naming an
    unknown rule."""
    wanted = {name.strip() for name in names if name.strip()}
    unknown = sorted(wanted - set(RULES))
    if unknown:
        raise ValueError(f"unknown health rule {unknown[0]!r} (the rules: {', '.join(RULES)})")
    return tuple(rule for rule in RULES if rule in wanted) or RULES


def health_problems(
    view: HostView, policy: HealthPolicy, now_ms: int, rules: Iterable[str] = RULES
) -> list[HealthProblem]:
    """The problems under ``rules``; empty when healthy. An unreadable state file is the only
    problem reported with ``signing``'s, whatever the rules: nothing else can be judged."""
    signing = [] if policy.signing_problem is None else [HealthProblem("signing", policy.signing_problem)]
    if view.problem is not None:
        return [HealthProblem("state_file", view.problem), *signing]
    selected = set(rules)
    problems: list[HealthProblem] = []
    if "poller" in selected:
        problems.extend(_poller_problems(view, policy, now_ms))
    if "stale" in selected:
        problems.extend(_stale_problems(view, policy, now_ms))
    if "gone" in selected:
        problems.extend(_gone_problems(view, policy))
    return problems + signing


def health_document(problems: list[HealthProblem], rules: Iterable[str] = RULES) -> dict[str, object]:
    """The health endpoint's body (and ``--check --json``'s)."""
    return {
        "status": "unhealthy" if problems else "ok",
        "rules": list(rules),
        "problems": [{"rule": problem.rule, "detail": problem.detail} for problem in problems],
    }


def lease_active(view: HostView, now_ms: int) -> bool:
    return view.lease is not None and view.lease.expires_ms > now_ms


def _poller_problems(view: HostView, policy: HealthPolicy, now_ms: int) -> list[HealthProblem]:
    if not policy.polling_enabled:
        detail = f"polling is disabled by {describe('POLLING_ENABLED')}: nothing refreshes this host"
        return [HealthProblem("poller", detail)]
    if not view.exists:
        return [HealthProblem("poller", f"no state file at {view.path}: no poller has run on this host")]
    lease = view.lease
    if lease is None:
        return [HealthProblem("poller", f"no poller has ever held the lease in {view.path}")]
    if lease.expires_ms > now_ms:
        return []
    since_ms = max(lease.expires_ms, view.counters.stopped_ms or 0)
    if since_ms == 0:
        detail = f"no active poller: {lease.holder} released the lease at an unknown time"
        return [HealthProblem("poller", detail)]
    if now_ms - since_ms <= policy.takeover_ms:
        return []
    detail = (
        f"no active poller for {format_duration(now_ms - since_ms)} (since {format_ms(since_ms)}; "
        f"a poller takes over within {format_duration(policy.takeover_ms)})"
    )
    return [HealthProblem("poller", detail)]


def _stale_problems(view: HostView, policy: HealthPolicy, now_ms: int) -> list[HealthProblem]:
    problems: list[HealthProblem] = []
    for key in policy.apps:
        state = view.snapshot.apps.get(key)
        if state is None or state.fetched_ms is None:
            problems.append(HealthProblem("stale", f"{key} was not fetched yet"))
            continue
        age = now_ms - state.fetched_ms
        if age > policy.stale_after_ms:
            detail = (
                f"{key} was last fetched {format_duration(age)} ago, over the "
                f"{format_duration(policy.stale_after_ms)} allowed (twice the interval plus "
                f"{format_duration(STALE_MARGIN_MS)})"
            )
            problems.append(HealthProblem("stale", detail))
    return problems


def _gone_problems(view: HostView, policy: HealthPolicy) -> list[HealthProblem]:
    configured = set(policy.apps)
    return [
        HealthProblem(
            "gone",
            f"{drop.app}: GitHub answers 404 since {format_ms(drop.seen_ms)} for a repository that had "
            f"release {drop.release}, still served",
        )
        for drop in view.drops
        if drop.kind == GONE and drop.app in configured
    ]
