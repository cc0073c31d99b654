"""Each app's release policy per channel, pure: ``immediate``, ``staged``, ``guarded`` or ``approval``.

A policy travels with the release controls as a control of its own action, so every host
applies it alike: what waits depends only on the releases' publish times, the policy and the
clock. ``waiting`` says which releases wait and how far each is; a hand-made control of the tag
wins. See docs/controls.md#release-policy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from craft_apps.controls.guard import Mark, served_share
from craft_apps.controls.rules import (
    ACTIONS,
    APPROVAL,
    APPROVED,
    FULL,
    GUARD,
    GUARDED,
    ROLLOUT,
    STAGED,
    Control,
    Served,
    Step,
)
from craft_apps.controls.rules import serve as serve_controls
from craft_apps.kernel.domain import Release
from craft_apps.kernel.instants import datetime_to_ms

IMMEDIATE = "immediate"
KINDS = (IMMEDIATE, STAGED, GUARDED, APPROVAL)
SCHEDULED = (STAGED, GUARDED)  # the policies with a schedule
DEFAULT_SCHEDULE = "+0h 5, +24h 25, +72h 100"
MAX_OFFSET_MS = 365 * 24 * 3600 * 1000  # a year: a step later than that is a typo
_UNIT_MS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000}
_STEP = re.compile(r"^\+(\d{1,6})([mhd])\s+(\d{1,3})\s*%?$")


class PolicyScheduleRefused(ValueError):
    """A relative schedule that can't be read or goes back: the message says what to change."""


@dataclass(frozen=True, slots=True)
class Offset:
    """From ``after_ms`` after a release's publication, its percentage is ``percentage``."""

    after_ms: int
    percentage: int

    def text(self) -> str:
        for unit in ("d", "h", "m"):
            if self.after_ms % _UNIT_MS[unit] == 0 and (self.after_ms or unit == "h"):
                return f"+{self.after_ms // _UNIT_MS[unit]}{unit} {self.percentage}"
        return f"+{self.after_ms // 60_000}m {self.percentage}"


def parse_offsets(text: str) -> tuple[Offset, ...]:
    """The steps ``text`` lists, separated by commas or lines (``+0h 5, +24h 25, +72h 100``:
    minutes ``m``, hours ``h`` or days ``d`` after publication, then the percentage). Raises
    PolicyScheduleRefused for an empty schedule, a step it can't read, or one that goes back."""
    steps: list[Offset] = []
    for number, raw in enumerate(re.split(r"[,\n]", text), start=1):
        line = raw.strip()
        if not line:
            continue
        found = _STEP.match(line)
        if found is None:
            raise PolicyScheduleRefused(
                f"Step {number}: write a delay after publication and a percentage, such as +24h 25 "
                f"(m, h or d), not {line[:40]!r}."
            )
        step = Offset(int(found[1]) * _UNIT_MS[found[2]], int(found[3]))
        if step.percentage > FULL or step.after_ms > MAX_OFFSET_MS:
            raise PolicyScheduleRefused(f"Step {number}: keep to 0-100 % and at most 365 days.")
        if steps and (step.after_ms <= steps[-1].after_ms or step.percentage < steps[-1].percentage):
            raise PolicyScheduleRefused(
                f"Step {number}: each step comes later than the one before, at a percentage no lower."
            )
        steps.append(step)
    if not steps:
        raise PolicyScheduleRefused(f"Give at least one step, such as {DEFAULT_SCHEDULE}.")
    return tuple(steps)


def format_offsets(steps: Sequence[Offset]) -> str:
    return ", ".join(step.text() for step in steps)


def policy_control(
    app_key: str, channel: str, kind: str, offsets: Sequence[Offset], since_ms: int
) -> Control | None:
    """The control a policy travels as; None for ``immediate``, which changes nothing."""
    if kind not in (*SCHEDULED, APPROVAL):
        return None
    steps = tuple(Step(since_ms + o.after_ms, o.percentage) for o in offsets) if kind in SCHEDULED else ()
    return Control(app_key, kind, "", channel, steps=steps, since_ms=since_ms)


@dataclass(frozen=True, slots=True)
class Wait:
    """A release a policy keeps back: ``percentage`` of launchers offered it now (None: it
    waits for an approval), and when and to what the percentage moves next on its own (a
    guarded one's: when it may, if healthy); ``paused``: a guarded one paused itself."""

    release: Release
    kind: str
    percentage: int | None
    next_ms: int | None = None
    next_percentage: int | None = None
    paused: bool = False


def policy_of(controls: Iterable[Control], channel: str) -> Control | None:
    """The policy among an app's ``controls`` that applies on ``channel``, if any."""
    return next(
        (c for c in controls if c.action in (*SCHEDULED, APPROVAL) and c.since_ms and c.applies_to(channel)),
        None,
    )


def waiting(
    releases: Iterable[Release], controls: Sequence[Control], channel: str, now_ms: int
) -> dict[str, Wait]:
    """The releases among ``releases`` that the app's policy on ``channel`` keeps back at
    ``now_ms``, by tag (none without a policy)."""
    policy = policy_of(controls, channel)
    if policy is None or policy.since_ms is None:
        return {}
    decided = {
        c.tag for c in controls if c.applies_to(channel) and (c.action in ACTIONS or c.action == APPROVED)
    }
    found: dict[str, Wait] = {}
    for release in releases:
        if release.published_at is None or release.tag in decided or release.tag in found:
            continue
        published_ms = datetime_to_ms(release.published_at)
        if published_ms < policy.since_ms:
            continue
        if policy.action == APPROVAL:
            found[release.tag] = Wait(release, APPROVAL, None)
            continue
        staged = rollout_of(policy, release.tag, published_ms)
        mark = marks_of(controls, channel).get(release.tag) if policy.action == GUARDED else None
        share = (
            staged.percentage_at(now_ms) if policy.action == STAGED else served_share(staged, mark, now_ms)
        )
        if share >= FULL:
            continue
        paused = mark is not None and mark.paused
        next_ms = None if paused else staged.next_change_ms(now_ms)
        later = None if next_ms is None else staged.percentage_at(next_ms)
        found[release.tag] = Wait(release, policy.action, share, next_ms, later, paused)
    return found


def marks_of(controls: Iterable[Control], channel: str) -> dict[str, Mark]:
    """What a guarded policy on ``channel`` decided for each tag (the ``guard`` controls its row
    travels with), by tag: the percentage it let through and whether it paused there."""
    return {
        c.tag: Mark(c.tag, c.percentage, c.paused_at_ms is not None, c.paused_at_ms or 0)
        for c in controls
        if c.action == GUARD and c.applies_to(channel)
    }


def schedules(releases: Iterable[Release], controls: Sequence[Control], channel: str) -> list[Control]:
    """The rollout a staged policy on ``channel`` gives each new release among ``releases``
    that no operator decided on (``rollout_of``), finished or not: when an answer changes. A
    guarded policy's moves on its own only to its first step (a later one is a write of its row)."""
    policy = policy_of(controls, channel)
    if policy is None or policy.action not in SCHEDULED or policy.since_ms is None:
        return []
    if policy.action == GUARDED:
        policy = replace(policy, steps=policy.steps[:1])
    since_ms: int = policy.since_ms or 0
    decided = {
        c.tag for c in controls if c.applies_to(channel) and (c.action in ACTIONS or c.action == APPROVED)
    }
    found: dict[str, Control] = {}
    for release in releases:
        if release.published_at is None or release.tag in decided:
            continue
        published_ms = datetime_to_ms(release.published_at)
        if published_ms >= since_ms:
            found.setdefault(release.tag, rollout_of(policy, release.tag, published_ms))
    return list(found.values())


def rollout_of(policy: Control, tag: str, published_ms: int) -> Control:
    """The hand-made rollout a staged policy's schedule amounts to for the release ``tag``
    published at ``published_ms``: what an operator takes over to pause or advance it."""
    since = policy.since_ms or 0
    steps = tuple(Step(published_ms + step.at_ms - since, step.percentage) for step in policy.steps)
    return Control(policy.app_key, ROLLOUT, tag, policy.channel, 0, steps)


def serve(
    listed: Release | None,
    pool: Sequence[Release],
    controls: Sequence[Control],
    channel: str,
    now_ms: int,
) -> Served:
    """``rules.serve`` with the app's policy on ``channel`` applied (``waiting``)."""
    waits = waiting([r for r in (listed, *pool) if r is not None], controls, channel, now_ms)
    withheld: Mapping[str, int | None] = {tag: wait.percentage for tag, wait in waits.items()}
    return serve_controls(listed, pool, controls, channel, now_ms, withheld)
