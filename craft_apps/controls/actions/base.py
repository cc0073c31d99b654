"""What every release control action says: what it takes, what it serves, how it is shown.

``Action`` is subclassed once per action; ``narrow`` takes the releases a control leaves to
serve and returns those it keeps and the rollout it offers, if any. See docs/controls.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import ClassVar, Protocol

from craft_apps.kernel.domain import Release, Rollout
from craft_apps.kernel.versions import tag_version

EVERY_CHANNEL = ""
FULL = 100  # the percentage at which a rollout is complete


class StepRead(Protocol):
    """What an action reads of a rollout's schedule step."""

    @property
    def percentage(self) -> int: ...


class ControlRead(Protocol):
    """What an action reads of a control (``controls.Control``)."""

    @property
    def tag(self) -> str: ...
    @property
    def channel(self) -> str: ...
    @property
    def percentage(self) -> int: ...
    @property
    def steps(self) -> Sequence[StepRead]: ...
    @property
    def paused_at_ms(self) -> int | None: ...
    def percentage_at(self, now_ms: int) -> int: ...


class Action:
    """One action a control can take, stored by ``name``. This base is also what a name that
    is no action (a release policy's) gets: it changes nothing served and takes nothing."""

    name: ClassVar[str] = ""
    rank: ClassVar[int] = 0  # its place in lists and in the serving rule, lowest first
    help_text: ClassVar[str] = ""  # what it does, as the admin's form says
    done: ClassVar[str] = ""  # what a tag it names is, in messages: "yanked"
    every_channel: ClassVar[bool] = False  # applies on every channel: its channel stays empty
    scheduled: ClassVar[bool] = False  # takes a percentage, a schedule and a pause
    one_per_channel: ClassVar[bool] = False  # at most one of an app per channel
    withdraws: ClassVar[bool] = False  # its tag is never served; a tag is withdrawn once
    refused_when_withdrawn: ClassVar[bool] = False  # contradicts a withdrawal of its tag

    def title(self, tag: str) -> str:
        """How a control of this action at ``tag`` is named in lists: ``hold v1.2.0``."""
        return f"{self.name} {tag}"

    def narrow(
        self, control: ControlRead, candidates: list[Release], known: Mapping[str, Release], now_ms: int
    ) -> tuple[list[Release], Rollout | None]:
        """The ``candidates`` left to serve under ``control`` (``known``: the app's releases
        by tag), and the rollout it offers (None: none)."""
        return candidates, None

    def own_problems(self, control: ControlRead) -> Iterator[tuple[str, str]]:
        """What is wrong with ``control`` alone, as (field, what to change): a percentage, a
        schedule or a pause on an action that takes none."""
        if not self.scheduled and (control.percentage or control.steps or control.paused_at_ms is not None):
            yield (
                "percentage",
                f"Only a rollout has a percentage, a schedule or a pause; a {self.name} has none.",
            )


def above(release: Release, tag: str, known: Mapping[str, Release]) -> bool:
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
