"""The release control actions (craft_apps.controls.actions): one class each, found by the name a
control stores, each saying what it takes, what it serves and how it is shown."""

from __future__ import annotations

from craft_apps.controls.actions.base import Action
from craft_apps.controls.actions.registry import EVERY_ACTION, named, names
from craft_apps.controls.rules import HOLD, ROLLOUT, YANK, Control


def test_the_registry_finds_each_action_by_its_stored_name_in_rank_order() -> None:
    assert names() == (HOLD, YANK, ROLLOUT) == ("hold", "yank", "rollout")
    assert [named(name) for name in names()] == list(EVERY_ACTION)
    assert len({type(action) for action in EVERY_ACTION}) == 3


def test_a_name_that_is_no_action_changes_nothing_and_takes_nothing() -> None:
    for name in ("staged", "approval", "freeze", ""):
        kind = named(name)
        assert type(kind) is Action
        assert not (kind.every_channel or kind.scheduled or kind.one_per_channel or kind.withdraws)


def test_each_action_says_what_it_takes_and_how_it_is_shown() -> None:
    hold, yank, rollout = (named(name) for name in (HOLD, YANK, ROLLOUT))
    assert (hold.one_per_channel, hold.refused_when_withdrawn, hold.scheduled) == (True, True, False)
    assert (yank.every_channel, yank.withdraws, yank.scheduled) == (True, True, False)
    assert (rollout.scheduled, rollout.one_per_channel, rollout.every_channel) == (True, True, False)
    assert [kind.title("v1.2.0") for kind in (hold, yank, rollout)] == [
        "hold v1.2.0",
        "yank v1.2.0",
        "rollout of v1.2.0",
    ]
    assert all(kind.help_text.endswith(".") for kind in EVERY_ACTION)


def test_a_control_asks_its_action() -> None:
    yank = Control("photocraft", YANK, "v1.2.0")
    assert yank.kind is named(YANK)
    assert yank.applies_to("beta") and not Control("photocraft", HOLD, "v1", "stable").applies_to("beta")
    assert Control("photocraft", ROLLOUT, "v1", percentage=100).in_force(0) is False
    assert Control("photocraft", HOLD, "v1").in_force(0) is True
