"""The yank: never serve its tag, on any channel. See docs/controls.md."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from craft_apps.controls.actions.base import EVERY_CHANNEL, Action, ControlRead
from craft_apps.kernel.domain import Release, Rollout


class Yank(Action):
    """Never serves the tag: the app falls back to its newest release not yanked."""

    name = "yank"
    rank = 20
    help_text = "never serve the tag (every channel, the downloads too)."
    done = "yanked"
    every_channel = True
    withdraws = True

    def narrow(
        self, control: ControlRead, candidates: list[Release], known: Mapping[str, Release], now_ms: int
    ) -> tuple[list[Release], Rollout | None]:
        return [r for r in candidates if r.tag != control.tag], None

    def own_problems(self, control: ControlRead) -> Iterator[tuple[str, str]]:
        if control.channel != EVERY_CHANNEL:
            yield "channel", "A yank applies on every channel: leave the channel empty."
        yield from super().own_problems(control)
