"""The staged rollout: offer its tag to a share of the launchers. See docs/controls.md."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from craft_apps.controls.actions.base import FULL, Action, ControlRead, above
from craft_apps.kernel.domain import Release, Rollout


class StagedRollout(Action):
    """Offers the tag at a percentage (raised by a schedule, frozen by a pause); the rest keep
    the release before it, and nothing newer is served meanwhile."""

    name = "rollout"
    rank = 30
    help_text = "offer the tag to a share of the launchers, the rest keep the release before it."
    done = "rolled out"
    scheduled = True
    one_per_channel = True

    def title(self, tag: str) -> str:
        return f"rollout of {tag}"

    def narrow(
        self, control: ControlRead, candidates: list[Release], known: Mapping[str, Release], now_ms: int
    ) -> tuple[list[Release], Rollout | None]:
        target = next((r for r in candidates if r.tag == control.tag), None)
        left = [r for r in candidates if r.tag != control.tag and not above(r, control.tag, known)]
        return left, None if target is None else Rollout(target, control.percentage_at(now_ms))

    def own_problems(self, control: ControlRead) -> Iterator[tuple[str, str]]:
        if not 0 <= control.percentage <= FULL:
            yield "percentage", f"Give a percentage from 0 to 100, not {control.percentage}."
        elif control.steps and control.steps[0].percentage < control.percentage:
            yield (
                "schedule",
                f"The schedule's first step ({control.steps[0].percentage} %) is below the starting "
                f"{control.percentage} %; a schedule only goes up.",
            )
