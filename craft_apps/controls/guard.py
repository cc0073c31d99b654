"""A ``guarded`` release policy's rule, pure: a staged schedule whose steps are taken only while
the release has its minimum of installs with a failure share under the threshold; over it, the
rollout pauses where it stands until an operator resumes it. ``decide`` takes the same counts
to the same answer on every host; what it decides is kept as a ``Mark`` on the policy's row.
See docs/controls.md#guarded-rollouts.
"""

from __future__ import annotations

from dataclasses import dataclass

from craft_apps.controls.rules import Control

FAILING = ("failed", "crashed", "rolled_back")  # the outcomes that count against a release


@dataclass(frozen=True, slots=True)
class GuardRule:
    """At least ``min_installs`` distinct installs, at most ``max_failing_percent`` failing."""

    min_installs: int
    max_failing_percent: float


@dataclass(frozen=True, slots=True)
class Health:
    """A release's distinct installs and how many of them failed, crashed or rolled back."""

    installs: int
    failing: int

    def percent(self) -> float:
        return 100.0 * self.failing / self.installs if self.installs else 0.0

    def since(self, base: Health) -> Health:
        """The counts added after ``base`` (never below zero)."""
        return Health(max(0, self.installs - base.installs), max(0, self.failing - base.failing))

    def text(self) -> str:
        return f"{self.failing} of {self.installs} installs failing ({self.percent():.1f} %)"


NONE = Health(0, 0)


@dataclass(frozen=True, slots=True)
class Mark:
    """What the guard decided for release ``tag``, kept: the percentage it let through, whether
    it paused there, when, the counts it judged (``seen``) and those a resume counts from (``base``)."""

    tag: str
    percentage: int
    paused: bool
    at_ms: int
    seen: Health = NONE
    base: Health = NONE

    def line(self) -> str:
        state = "paused" if self.paused else "open"
        counts = (self.seen.installs, self.seen.failing, self.base.installs, self.base.failing)
        return " ".join((self.tag, str(self.percentage), state, str(self.at_ms), *map(str, counts)))


def parse_marks(text: str) -> dict[str, Mark]:
    """The marks ``text`` holds, one a line, by tag; a line of another shape is skipped."""
    found: dict[str, Mark] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 8 or parts[2] not in ("paused", "open") or not all(p.isdigit() for p in parts[3:]):
            continue
        if not parts[1].isdigit() or int(parts[1]) > 100:
            continue
        n = [int(p) for p in parts[3:]]
        found[parts[0]] = Mark(
            parts[0], int(parts[1]), parts[2] == "paused", n[0], Health(n[1], n[2]), Health(n[3], n[4])
        )
    return found


def format_marks(marks: dict[str, Mark]) -> str:
    return "\n".join(mark.line() for mark in marks.values())


@dataclass(frozen=True, slots=True)
class Decision:
    """The percentage served, whether the rollout is paused, why (one line), and the mark to
    keep (None: nothing to write)."""

    percentage: int
    paused: bool
    why: str
    mark: Mark | None = None


def first_share(rollout: Control, now_ms: int) -> int:
    """The schedule's percentage at ``now_ms`` up to its first step: taken on time alone, since
    a release has no installs before it is offered."""
    share = rollout.percentage_at(now_ms)
    return min(share, rollout.steps[0].percentage) if rollout.steps else share


def served_share(rollout: Control, mark: Mark | None, now_ms: int) -> int:
    """The percentage a guarded release is offered at ``now_ms``: its mark's, else its first step's."""
    first = first_share(rollout, now_ms)
    return first if mark is None else max(mark.percentage, first)


def decide(
    rollout: Control, mark: Mark | None, rule: GuardRule, counts: Health | None, now_ms: int
) -> Decision:
    """What the guard does with the release ``rollout`` schedules (``policies.rollout_of``) at
    ``now_ms``, given its mark and its counts (None: they can't be read, so nothing moves)."""
    current = served_share(rollout, mark, now_ms)
    if mark is not None and mark.paused:
        return Decision(current, True, f"paused at {current} %: {mark.seen.text()}")
    if counts is None:
        return Decision(current, False, f"stays at {current} %: the reports can't be read")
    base = NONE if mark is None else mark.base
    health = counts.since(base)
    if health.installs < rule.min_installs:
        why = f"stays at {current} %: {health.installs} of the {rule.min_installs} installs it needs"
        return Decision(current, False, why)
    if health.percent() > rule.max_failing_percent:
        why = f"paused at {current} %: {health.text()}, over {rule.max_failing_percent:g} %"
        return Decision(current, True, why, Mark(rollout.tag, current, True, now_ms, health, base))
    target = rollout.percentage_at(now_ms)
    if target <= current:
        return Decision(current, False, f"healthy at {current} %: {health.text()}")
    why = f"moves to {target} %: {health.text()}"
    return Decision(target, False, why, Mark(rollout.tag, target, False, now_ms, health, base))


def resume(mark: Mark, counts: Health, now_ms: int) -> Mark:
    """An operator's resume of a paused release: it moves on again, judged on the reports after now."""
    return Mark(mark.tag, mark.percentage, False, now_ms, NONE, counts)
