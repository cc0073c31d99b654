"""Prefixed tags (tauri-action's ``artcraft-v0.37.0``) are versions for every consumer of the one
tag rule (craft_apps.kernel.versions): the release controls' "newer" and "below" order them by version,
not by publish time. The rule's own table is in tests/test_versions.py."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from craft_apps.controls.rules import HOLD, ROLLOUT, Control, serve
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import Release
from craft_apps.kernel.instants import datetime_to_ms
from tests.support import release

DAY = timedelta(days=1)
T0 = datetime(2026, 10, 1, tzinfo=UTC)
NOW = datetime_to_ms(T0 + 30 * DAY)


def tagged(tag: str, *, day: int) -> Release:
    return replace(
        release("0.0.1", app="artcraft", repo="storytold/artcraft"), tag=tag, published_at=T0 + day * DAY
    )


def test_a_hold_at_a_prefixed_tag_keeps_back_higher_versions_published_before_it() -> None:
    # A fix of the older line, published after 0.37.0: held at it, 0.37.0 is newer, so not served.
    current, fix = tagged("artcraft-v0.37.0", day=5), tagged("artcraft-v0.36.2", day=9)
    held = serve(current, [fix], [Control("artcraft", HOLD, "artcraft-v0.36.2")], "stable", NOW)
    assert held.latest_release == fix


def test_a_rollout_of_a_prefixed_tag_serves_the_newest_version_below_it() -> None:
    # 0.37.1 was published after 0.38.0 went out in stages: it is still below it by version.
    staged = tagged("artcraft-v0.38.0", day=5)
    patch, older = tagged("artcraft-v0.37.1", day=7), tagged("artcraft-v0.37.0", day=1)
    served = serve(
        staged, [patch, older], [Control("artcraft", ROLLOUT, "artcraft-v0.38.0", "", 10)], "stable", NOW
    )
    assert served.latest_release == patch
    assert served.rollout is not None and served.rollout.release == staged
