"""What operators decide launchers get, per app: hold, yank and staged rollout. Pure (no Django).

A ``Control`` is one operator decision about one app's tag:

- **hold** at a tag: nothing newer than it is served (a pin). The held release is served while
  GitHub has it; if it is deleted there, the newest release below it is.
- **yank** a tag: never served, on any channel (a yank has no channel), in any rollout, nor by
  the downloads; the app falls back to its newest release that isn't yanked (``null`` when
  every release it has is).
- **rollout** of a tag: while its percentage is below 100 the release is offered to that share
  of the launchers (``domain.Rollout``) and ``latest_release`` stays the newest release below
  it; nothing newer than it is served meanwhile. A schedule (``Step``) raises the percentage at
  the instants set, on every host alike since it depends only on the clock; a pause freezes it
  where it stood at ``paused_at_ms``. At 100 % the control no longer changes anything.

A hold or a rollout may be scoped to one channel (``channel``), else it applies on every one.
``serve`` is the one rule that applies them; ``problems`` the one check a set of controls must
pass (the admin's form and the import both call it). Which release is "newer" is
``versions``' precedence of the tags, and the publish time for tags that aren't versions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from craft_apps.compat import fromisoformat
from craft_apps.domain import Release, Rollout
from craft_apps.instants import datetime_to_ms, format_rfc3339, ms_to_datetime
from craft_apps.versions import newest, tag_version

HOLD = "hold"
YANK = "yank"
ROLLOUT = "rollout"
ACTIONS = (HOLD, YANK, ROLLOUT)
EVERY_CHANNEL = ""
FULL = 100  # the percentage at which a rollout is complete


@dataclass(frozen=True, slots=True)
class Step:
    """From ``at_ms`` on, the rollout's percentage is ``percentage``."""

    at_ms: int
    percentage: int

    def line(self) -> str:
        return f"{format_rfc3339(ms_to_datetime(self.at_ms))} {self.percentage}"


@dataclass(frozen=True, slots=True)
class Control:
    app_key: str
    action: str
    tag: str
    channel: str = EVERY_CHANNEL
    percentage: int = 0  # a rollout's percentage before its first step
    steps: tuple[Step, ...] = ()
    paused_at_ms: int | None = None  # a paused rollout stays where it stood then

    def applies_to(self, channel: str) -> bool:
        return self.action == YANK or self.channel in (EVERY_CHANNEL, channel)

    def percentage_at(self, now_ms: int) -> int:
        """A rollout's percentage at ``now_ms``: its last step reached (a paused one counts
        the steps reached when it was paused)."""
        until = now_ms if self.paused_at_ms is None else min(now_ms, self.paused_at_ms)
        current = self.percentage
        for step in self.steps:
            if step.at_ms <= until:
                current = step.percentage
        return current

    def next_change_ms(self, now_ms: int) -> int | None:
        """When the rollout's percentage changes next on its own; None for none."""
        if self.action != ROLLOUT or self.paused_at_ms is not None:
            return None
        return next((step.at_ms for step in self.steps if step.at_ms > now_ms), None)

    def in_force(self, now_ms: int) -> bool:
        """Whether it changes what is served: a rollout at 100 % no longer does."""
        return self.action != ROLLOUT or self.percentage_at(now_ms) < FULL


@dataclass(frozen=True, slots=True)
class Served:
    """What one app is served on one channel."""

    latest_release: Release | None
    rollout: Rollout | None = None


def _above(release: Release, tag: str, known: Mapping[str, Release]) -> bool:
    """Whether ``release`` is newer than the release tagged ``tag``. Versions compare by
    precedence; otherwise by publish time when both are known; a release that can't be placed
    is not above."""
    if release.tag == tag:
        return False
    mine, theirs = tag_version(release.tag), tag_version(tag)
    if mine is not None and theirs is not None:
        return mine.compare(theirs) > 0
    other = known.get(tag)
    if other is None or release.published_at is None or other.published_at is None:
        return False
    return release.published_at > other.published_at


def serve(
    listed: Release | None,
    pool: Iterable[Release],
    controls: Sequence[Control],
    channel: str,
    now_ms: int,
) -> Served:
    """What an app whose channel lists ``listed`` (GitHub's answer, or the beta channel's
    choice) is served under ``controls`` (the app's), choosing among ``listed`` and ``pool``
    (the app's other releases of that channel). ``listed`` is kept whenever the controls allow
    it, so an app the controls don't touch is served as without them."""
    mine = [c for c in controls if c.applies_to(channel) and c.in_force(now_ms)]
    if not mine:
        return Served(listed)
    known: dict[str, Release] = {}
    for release in (listed, *pool):
        if release is not None:
            known.setdefault(release.tag, release)
    yanked = {c.tag for c in mine if c.action == YANK}
    candidates = [r for r in known.values() if r.tag not in yanked]
    for hold in (c for c in mine if c.action == HOLD):
        candidates = [r for r in candidates if not _above(r, hold.tag, known)]
    offered: Rollout | None = None
    for staged in (c for c in mine if c.action == ROLLOUT):
        target = next((r for r in candidates if r.tag == staged.tag), None)
        candidates = [r for r in candidates if r.tag != staged.tag and not _above(r, staged.tag, known)]
        if target is not None:
            offered = Rollout(target, staged.percentage_at(now_ms))
    if listed is not None and any(r.tag == listed.tag for r in candidates):
        return Served(listed, offered)
    return Served(newest(None, candidates), offered)


def next_change_ms(controls: Iterable[Control], now_ms: int) -> int | None:
    """The first instant after ``now_ms`` at which a schedule moves a percentage."""
    return min((t for c in controls if (t := c.next_change_ms(now_ms)) is not None), default=None)


def percentages(controls: Iterable[Control], now_ms: int) -> tuple[int, ...]:
    """Each control's percentage at ``now_ms`` (0 for a hold or a yank): what changes on its own."""
    return tuple(c.percentage_at(now_ms) if c.action == ROLLOUT else 0 for c in controls)


def by_app(controls: Iterable[Control]) -> dict[str, tuple[Control, ...]]:
    grouped: dict[str, list[Control]] = {}
    for control in controls:
        grouped.setdefault(control.app_key, []).append(control)
    return {key: tuple(found) for key, found in grouped.items()}


# -- The schedule as operators write it: one step a line, "<instant> <percentage>".


class ScheduleRefused(ValueError):
    """A schedule that can't be read or goes back: the message says what to change."""


EXAMPLE_STEP = "2026-12-02T09:00Z 25"


def parse_schedule(text: str) -> tuple[Step, ...]:
    """The steps ``text`` lists, one a line (``2026-12-02T09:00Z 25``; empty lines skipped).
    Raises ScheduleRefused when a line can't be read, a percentage is outside 0-100, or the
    schedule goes back (an instant not later than the one before, a lower percentage)."""
    steps: list[Step] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ScheduleRefused(
                f"Line {number}: write an instant and a percentage, such as {EXAMPLE_STEP}."
            )
        instant, share = parts
        at = _instant(instant)
        if at is None:
            raise ScheduleRefused(
                f"Line {number}: {instant[:40]!r} is not an instant with its time zone; "
                f"write it as {EXAMPLE_STEP.split()[0]} (UTC) or with an offset."
            )
        percentage = _percentage(share.removesuffix("%"))
        if percentage is None:
            raise ScheduleRefused(
                f"Line {number}: give a whole percentage from 0 to 100, not {share[:20]!r}."
            )
        step = Step(datetime_to_ms(at), percentage)
        if steps and step.at_ms <= steps[-1].at_ms:
            raise ScheduleRefused(
                f"Line {number}: {instant} is not later than line {number - 1}'s instant; "
                "list the steps in time order."
            )
        if steps and step.percentage < steps[-1].percentage:
            raise ScheduleRefused(
                f"Line {number}: the percentage goes back from {steps[-1].percentage} to "
                f"{step.percentage}; a schedule only goes up (pause the rollout to stop it)."
            )
        steps.append(step)
    return tuple(steps)


def format_schedule(steps: Sequence[Step]) -> str:
    return "\n".join(step.line() for step in steps)


def _instant(text: str) -> datetime | None:
    try:
        at = fromisoformat(text)
    except ValueError:
        return None
    if at.tzinfo is None:
        return None
    try:
        datetime_to_ms(at)
    except OverflowError:
        return None
    return at if 1970 <= at.year <= 9999 else None


def _percentage(text: str) -> int | None:
    if not text.isdigit() or len(text) > 3:
        return None
    value = int(text)
    return value if 0 <= value <= FULL else None


# -- The one check of a set of controls.


@dataclass(frozen=True, slots=True)
class Problem:
    """Why one control of a set is refused: its index in the set, the field to change (None
    for the control as a whole) and what to change."""

    index: int
    field: str | None
    message: str


def problems(
    controls: Sequence[Control], known_tags: Mapping[str, frozenset[str]] | None = None
) -> list[Problem]:
    """What is wrong with ``controls`` as one set: a percentage outside 0-100, a schedule
    below the starting percentage, a field its action doesn't take, a yank scoped to a channel,
    a hold on a yanked tag, two holds (or two rollouts) of one app on one channel,
    a tag yanked twice, and, for an app in ``known_tags`` (the tags the host knows of it), a
    tag it has no release of."""
    found: list[Problem] = []
    yanks: dict[tuple[str, str], int] = {}
    for index, control in enumerate(controls):
        if control.action == YANK:
            key = (control.app_key, control.tag)
            if key in yanks:
                found.append(Problem(index, "tag", f"{control.tag} of {control.app_key} is already yanked."))
            yanks.setdefault(key, index)
    scopes: dict[tuple[str, str], int] = {}
    for index, control in enumerate(controls):
        found.extend(_own_problems(index, control))
        if control.action in (HOLD, ROLLOUT):
            # A rollout's release may be yanked (the brake for a rollout gone bad: the yank
            # wins); a hold on one contradicts it.
            if control.action == HOLD and (control.app_key, control.tag) in yanks:
                found.append(
                    Problem(
                        index,
                        "tag",
                        f"{control.tag} of {control.app_key} is yanked: hold at another tag, "
                        "or delete the yank first.",
                    )
                )
            for channel in _channels_of(control):
                other = scopes.setdefault((f"{control.app_key}/{control.action}", channel), index)
                if other != index:
                    found.append(
                        Problem(
                            index,
                            "channel",
                            f"{control.app_key} already has a {control.action} on the {channel} channel "
                            f"({controls[other].tag}): change that one, or scope this one to another "
                            "channel.",
                        )
                    )
                    break
        tags = (known_tags or {}).get(control.app_key)
        if tags is not None and control.tag not in tags:
            shown = ", ".join(sorted(tags)[:5]) or "none"
            found.append(
                Problem(
                    index,
                    "tag",
                    f"{control.app_key} has no release tagged {control.tag} that this host knows "
                    f"(it knows {shown}{', …' if len(tags) > 5 else ''}); check the tag's spelling.",
                )
            )
    return found


def _channels_of(control: Control) -> tuple[str, ...]:
    return ("stable", "beta") if control.channel == EVERY_CHANNEL else (control.channel,)


def _own_problems(index: int, control: Control) -> Iterable[Problem]:
    if control.action not in ACTIONS:
        yield Problem(index, "action", f"Choose one of {', '.join(ACTIONS)}.")
        return
    if not control.tag.strip():
        yield Problem(index, "tag", "Give the release's tag, such as v1.2.0.")
    if control.action == YANK and control.channel != EVERY_CHANNEL:
        yield Problem(index, "channel", "A yank applies on every channel: leave the channel empty.")
    if control.action != ROLLOUT:
        if control.percentage or control.steps or control.paused_at_ms is not None:
            yield Problem(
                index,
                "percentage",
                f"Only a rollout has a percentage, a schedule or a pause; a {control.action} has none.",
            )
        return
    if not 0 <= control.percentage <= FULL:
        yield Problem(index, "percentage", f"Give a percentage from 0 to 100, not {control.percentage}.")
    elif control.steps and control.steps[0].percentage < control.percentage:
        yield Problem(
            index,
            "schedule",
            f"The schedule's first step ({control.steps[0].percentage} %) is below the starting "
            f"{control.percentage} %; a schedule only goes up.",
        )
