"""The operators' release controls, per app: hold, yank and staged rollout, as plain data (no Django).

``Control`` is one decision about one app's tag; ``serve`` the one rule that applies a set of
them, ``problems`` the one check a set must pass, ``as_data``/``from_data`` the one codec (the
kept file, the fleet's Redis). A release policy travels as a control of its own action
(``POLICY_ACTIONS``, ``policies``). See docs/controls.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from difflib import get_close_matches
from typing import Any, TypeGuard

from craft_apps.controls.actions.base import EVERY_CHANNEL as EVERY_CHANNEL
from craft_apps.controls.actions.base import FULL as FULL
from craft_apps.controls.actions.base import Action
from craft_apps.controls.actions.hold import Hold
from craft_apps.controls.actions.registry import named, names
from craft_apps.controls.actions.rollout import StagedRollout
from craft_apps.controls.actions.yank import Yank
from craft_apps.kernel.compat import fromisoformat
from craft_apps.kernel.domain import Channel, Release, Rollout, is_stored_time, tag_problem
from craft_apps.kernel.instants import datetime_to_ms, format_rfc3339, ms_to_datetime
from craft_apps.kernel.versions import newest, tag_version

# The actions' stored names (one class each, ``actions``).
HOLD = Hold.name
YANK = Yank.name
ROLLOUT = StagedRollout.name
ACTIONS = names()
# A release policy and its approvals travel with the controls (``policies`` says what they do).
STAGED = "staged"
GUARDED = "guarded"  # staged, moving on only while the release is healthy (``guard``)
APPROVAL = "approval"
APPROVED = "approved"
GUARD = "guard"  # what a guarded policy decided for one tag: its percentage, paused or not
POLICY_ACTIONS = (STAGED, GUARDED, APPROVAL, APPROVED, GUARD)


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
    since_ms: int | None = None  # a release policy's: when it took effect (``policies``)

    @property
    def kind(self) -> Action:
        """What its action does (``actions``); the base ``Action`` for a policy's."""
        return named(self.action)

    def applies_to(self, channel: str) -> bool:
        return self.kind.every_channel or self.channel in (EVERY_CHANNEL, channel)

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
        if not self.kind.scheduled or self.paused_at_ms is not None:
            return None
        return next((step.at_ms for step in self.steps if step.at_ms > now_ms), None)

    def in_force(self, now_ms: int) -> bool:
        """Whether it changes what is served: a rollout at 100 % no longer does."""
        return not self.kind.scheduled or self.percentage_at(now_ms) < FULL


@dataclass(frozen=True, slots=True)
class Served:
    """What one app is served on one channel."""

    latest_release: Release | None
    rollout: Rollout | None = None


def serve(
    listed: Release | None,
    pool: Iterable[Release],
    controls: Sequence[Control],
    channel: str,
    now_ms: int,
    withheld: Mapping[str, int | None] | None = None,
) -> Served:
    """What an app whose channel lists ``listed`` (GitHub's answer, or the beta channel's
    choice) is served under ``controls`` (the app's), choosing among ``listed`` and ``pool``
    (the app's other releases of that channel). ``listed`` is kept whenever the controls allow
    it, so an app the controls don't touch is served as without them. ``withheld`` (a release
    policy's, ``policies.waiting``) names the tags that wait: never ``latest_release``; the
    newest of them is offered as a rollout at its percentage (None: not offered) unless a
    hand-made rollout is."""
    mine = [c for c in controls if c.action in ACTIONS and c.applies_to(channel) and c.in_force(now_ms)]
    withheld = withheld or {}
    if not mine and not withheld:
        return Served(listed)
    known: dict[str, Release] = {}
    for release in (listed, *pool):
        if release is not None:
            known.setdefault(release.tag, release)
    candidates = list(known.values())
    offered: Rollout | None = None
    for control in sorted(mine, key=lambda c: c.kind.rank):  # each action's part, in rank order
        candidates, offer = control.kind.narrow(control, candidates, known, now_ms)
        offered = offered if offer is None else offer
    subject = newest(None, [r for r in candidates if r.tag in withheld])
    candidates = [r for r in candidates if r.tag not in withheld]
    if offered is None and subject is not None and (share := withheld[subject.tag]) is not None:
        offered = Rollout(subject, share)
    if listed is not None and any(r.tag == listed.tag for r in candidates):
        return Served(listed, offered)
    return Served(newest(None, candidates), offered)


def next_change_ms(controls: Iterable[Control], now_ms: int) -> int | None:
    """The first instant after ``now_ms`` at which a schedule moves a percentage."""
    return min((t for c in controls if (t := c.next_change_ms(now_ms)) is not None), default=None)


def percentages(controls: Iterable[Control], now_ms: int) -> tuple[int, ...]:
    """Each control's percentage at ``now_ms`` (0 for a hold or a yank): what changes on its own."""
    return tuple(c.percentage_at(now_ms) if c.kind.scheduled else 0 for c in controls)


def by_app(controls: Iterable[Control]) -> dict[str, tuple[Control, ...]]:
    grouped: dict[str, list[Control]] = {}
    for control in controls:
        grouped.setdefault(control.app_key, []).append(control)
    return {key: tuple(found) for key, found in grouped.items()}


# -- The codec: a control as JSON types and back.

CONTROL_FIELDS = tuple(f.name for f in fields(Control))


def as_data(control: Control) -> dict[str, Any]:
    """``control`` as JSON types: each field under its name, each step as ``[at_ms, percentage]``;
    ``since_ms`` only for a release policy, so a set of controls is written as before policies."""
    data = {name: getattr(control, name) for name in CONTROL_FIELDS}
    data["steps"] = [[step.at_ms, step.percentage] for step in control.steps]
    if control.since_ms is None:
        del data["since_ms"]
    return data


def from_data(data: object) -> Control:
    """The control ``data`` holds, as ``as_data`` writes it. Raises ValueError, saying what is
    off, for anything else: what a file or Redis holds is untrusted."""
    if not isinstance(data, dict):
        raise ValueError("a control that isn't an object")
    texts = [data.get(name) for name in ("app_key", "action", "tag", "channel")]
    if not all(isinstance(text, str) for text in texts) or data.get("action") not in ACTIONS + POLICY_ACTIONS:
        raise ValueError("a control without its key, action, tag or channel")
    percentage, steps, paused = data.get("percentage"), data.get("steps"), data.get("paused_at_ms")
    if not _whole(percentage) or not isinstance(steps, list):
        raise ValueError("a control with a percentage or steps of another shape")
    if paused is not None and not _stored_time(paused):
        raise ValueError("a control paused at no instant")
    since = data.get("since_ms")
    if since is not None and not _stored_time(since):
        raise ValueError("a release policy in force since no instant")
    app_key, action, tag, channel = (str(text) for text in texts)
    return Control(app_key, action, tag, channel, percentage, _steps(steps), paused, since)


def _steps(rows: list[object]) -> tuple[Step, ...]:
    read = []
    for row in rows:
        if not (isinstance(row, list) and len(row) == 2 and _stored_time(row[0]) and _whole(row[1])):
            raise ValueError("a schedule step of another shape")
        read.append(Step(row[0], row[1]))
    return tuple(read)


def _whole(value: object) -> TypeGuard[int]:
    """A percentage: a whole number from 0 to 100 (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= FULL


def _stored_time(value: object) -> TypeGuard[int]:
    return is_stored_time(value)


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


def problems(controls: Sequence[Control]) -> list[Problem]:
    """What is wrong with ``controls`` as one set: a percentage outside 0-100, a schedule
    below the starting percentage, a field its action doesn't take, a tag git refuses
    (``kernel.domain.tag_problem``, the rule GitHub's tags pass), a yank scoped to a channel,
    a hold on a yanked tag, two holds (or two rollouts) of one app on one channel,
    a tag yanked twice. A tag the host has no release of is not one (``waiting``)."""
    found: list[Problem] = []
    withdrawn: dict[tuple[str, str], Control] = {}
    for index, control in enumerate(controls):
        if control.kind.withdraws:
            key = (control.app_key, control.tag)
            if key in withdrawn:
                message = f"{control.tag} of {control.app_key} is already {control.kind.done}."
                found.append(Problem(index, "tag", message))
            withdrawn.setdefault(key, control)
    scopes: dict[tuple[str, str], int] = {}
    for index, control in enumerate(controls):
        found.extend(_own_problems(index, control))
        found.extend(_scope_problems(index, controls, withdrawn, scopes))
    return found


def _scope_problems(
    index: int,
    controls: Sequence[Control],
    withdrawn: Mapping[tuple[str, str], Control],
    scopes: dict[tuple[str, str], int],
) -> Iterable[Problem]:
    """What is wrong with a control among the others: a hold on a yanked tag, or a second
    hold or rollout of its app on a channel (``scopes`` notes the first of each)."""
    control = controls[index]
    # A rollout's release may be yanked (to stop a rollout gone bad: the yank wins); a hold on
    # one contradicts it.
    by = withdrawn.get((control.app_key, control.tag))
    if control.kind.refused_when_withdrawn and by is not None:
        yield Problem(
            index,
            "tag",
            f"{control.tag} of {control.app_key} is {by.kind.done}: {control.action} at another tag, "
            f"or delete the {by.action} first.",
        )
    if not control.kind.one_per_channel:
        return
    for channel in _channels_of(control):
        other = scopes.setdefault((f"{control.app_key}/{control.action}", channel), index)
        if other != index:
            yield Problem(
                index,
                "channel",
                f"{control.app_key} already has a {control.action} on the {channel} channel "
                f"({controls[other].tag}): change that one, or scope this one to another channel.",
            )
            return


def tag_known(control: Control, known_tags: Mapping[str, frozenset[str]]) -> bool:
    """Whether the host has a release of the control's tag (``known_tags``: the tags it knows
    of each app). A control whose tag it hasn't is kept, and applied the moment the release
    appears (``serve`` sees it among the app's releases)."""
    return control.tag in known_tags.get(control.app_key, frozenset())


@dataclass(frozen=True, slots=True)
class Waiting:
    """A control of a set whose tag the host has no release of yet: accepted, with a warning
    naming the tags it knows, so a typo shows (``message``)."""

    index: int
    message: str


def waiting(controls: Sequence[Control], known_tags: Mapping[str, frozenset[str]]) -> list[Waiting]:
    """The controls of ``controls`` whose tag the host knows no release of (``tag_known``)."""
    return [
        Waiting(index, _waiting_message(control, known_tags.get(control.app_key, frozenset())))
        for index, control in enumerate(controls)
        if not tag_known(control, known_tags)
    ]


SHOWN_TAGS = 6  # the tags a warning names, newest first


def _waiting_message(control: Control, tags: frozenset[str]) -> str:
    ordered = newest_first(tags)
    shown = ", ".join(ordered[:SHOWN_TAGS]) + (", …" if len(ordered) > SHOWN_TAGS else "")
    knows = f"it knows {shown}" if tags else "it knows no release of it yet"
    close = get_close_matches(control.tag, ordered, n=1, cutoff=0.8)
    hint = f" Did you mean {close[0]}?" if close else " Check the tag's spelling if it is a typo."
    return (
        f"{control.app_key} has no release tagged {control.tag} that this host knows ({knows}): "
        "the control is kept, and applied the moment the release appears." + hint
    )


def newest_first(tags: frozenset[str]) -> list[str]:
    """Versions first, newest first (SemVer precedence); then the other tags by name."""
    versions = {tag: version for tag in tags if (version := tag_version(tag)) is not None}
    ordered = sorted(versions, key=lambda tag: (versions[tag], tag), reverse=True)
    return ordered + sorted(tags - versions.keys())


def _channels_of(control: Control) -> tuple[str, ...]:
    return tuple(Channel) if control.channel == EVERY_CHANNEL else (control.channel,)


def _own_problems(index: int, control: Control) -> Iterable[Problem]:
    if control.action not in ACTIONS:
        yield Problem(index, "action", f"Choose one of {', '.join(ACTIONS)}.")
        return
    if not control.tag.strip():
        yield Problem(index, "tag", "Give the release's tag, such as v1.2.0.")
    elif (wrong := tag_problem(control.tag)) is not None:
        # The rule GitHub's tags pass (``kernel.domain.tag_problem``): a tag git refuses names
        # no release, and one with a control character would drive the terminal that prints it.
        yield Problem(
            index, "tag", f"{wrong[0].upper()}{wrong[1:]}: write the tag as git names it, such as v1.2.0."
        )
    found = control.kind.own_problems(control)
    yield from (Problem(index, field, message) for field, message in found)
