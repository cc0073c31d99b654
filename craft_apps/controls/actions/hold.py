"""The hold: serve nothing newer than its tag, per channel. See docs/controls.md."""

from __future__ import annotations

from collections.abc import Mapping

from craft_apps.controls.actions.base import Action, ControlRead, above
from craft_apps.kernel.domain import Release, Rollout


class Hold(Action):
    """Serves nothing newer than the tag: the held release, or the newest below it."""

    name = "hold"
    rank = 10
    help_text = "serve nothing newer than the tag."
    done = "held"
    one_per_channel = True
    refused_when_withdrawn = True

    def narrow(
        self, control: ControlRead, candidates: list[Release], known: Mapping[str, Release], now_ms: int
    ) -> tuple[list[Release], Rollout | None]:
        return [r for r in candidates if not above(r, control.tag, known)], None
