"""The release policy's row: when it took effect (set when it leaves ``immediate``, kept across
edits, cleared when it returns), the controls it travels as, the history its app then needs,
and every write bumping the marker the web processes look at."""

from __future__ import annotations

import pytest

from craft_apps.content.channels import read_controls, read_history_needs
from craft_apps.content.feed import read_version
from craft_apps.content.policy_models import APPROVED_KEPT, ReleasePolicy
from craft_apps.controls.rules import APPROVAL, APPROVED, STAGED, Step
from craft_apps.kernel.instants import datetime_to_ms

pytestmark = pytest.mark.django_db


def saved(**fields: object) -> ReleasePolicy:
    row = ReleasePolicy(app_key="PhotoCraft", reason="brakes", **fields)
    row.full_clean()
    row.save()
    return row


def test_immediate_changes_nothing_and_its_app_needs_no_history():
    saved()
    assert read_controls() == ()
    assert read_history_needs() == {}


def test_it_takes_effect_when_it_leaves_immediate_and_keeps_that_instant_across_edits():
    row = saved()
    assert row.effective_from is None
    row.policy = STAGED
    row.save()
    since = row.effective_from
    assert since is not None
    row.schedule, row.policy = "+0h 10, +2d 100", APPROVAL
    row.save()
    assert row.effective_from == since, "an edit doesn't exempt the releases published meanwhile"
    row.policy = "immediate"
    row.save()
    assert row.effective_from is None


def test_it_travels_as_controls_with_its_approvals_and_its_app_needs_history():
    row = saved(policy=STAGED, schedule="+0h 5, +1d 100", channel="beta")
    row.approve("v0.6.0")
    row.save()
    since = datetime_to_ms(row.effective_from)  # type: ignore[arg-type]
    policy, approval = read_controls()
    assert (policy.app_key, policy.action, policy.channel, policy.since_ms) == (
        "photocraft",
        STAGED,
        "beta",
        since,
    )
    assert policy.steps == (Step(since, 5), Step(since + 86_400_000, 100))
    assert (approval.action, approval.tag, approval.channel) == (APPROVED, "v0.6.0", "beta")
    assert set(read_history_needs()) == {"photocraft"}


def test_approvals_are_bounded_and_a_tag_approved_again_moves_last():
    row = saved(policy=APPROVAL)
    for n in range(APPROVED_KEPT + 5):
        row.approve(f"v0.{n}.0")
    row.approve("v0.10.0")
    tags = row.approved_tags()
    assert len(tags) == APPROVED_KEPT and tags[-1] == "v0.10.0" and "v0.0.0" not in tags


def test_every_write_bumps_the_marker():
    before = read_version("default")
    row = saved(policy=APPROVAL)
    after_save = read_version("default")
    assert after_save is not None and after_save != before
    row.delete()
    assert read_version("default") != after_save
