"""The release controls' rule (craft_apps.controls.rules): what hold, yank and rollout serve, how a
schedule moves, and the one check a set of controls must pass, on plain releases."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from craft_apps.controls.rules import (
    HOLD,
    ROLLOUT,
    YANK,
    Control,
    ScheduleRefused,
    Step,
    format_schedule,
    next_change_ms,
    parse_schedule,
    problems,
    serve,
    tag_known,
    waiting,
)
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import Release, Rollout
from craft_apps.kernel.instants import datetime_to_ms
from tests.support import release

DAY = timedelta(days=1)
T0 = datetime(2026, 10, 1, tzinfo=UTC)
NOW = datetime_to_ms(T0 + 30 * DAY)


def tagged(tag: str, *, prerelease: bool = False, day: int = 0) -> Release:
    return replace(release("0.0.1"), tag=tag, version=tag, prerelease=prerelease, published_at=T0 + day * DAY)


V1_1, V1_2, V1_3 = tagged("v1.1.0", day=1), tagged("v1.2.0", day=2), tagged("v1.3.0", day=3)
POOL = (V1_3, V1_2, V1_1)


def yank(tag: str) -> Control:
    return Control("photocraft", YANK, tag)


def hold(tag: str, channel: str = "") -> Control:
    return Control("photocraft", HOLD, tag, channel)


def rollout(tag: str, percentage: int, *steps: Step, paused_at_ms: int | None = None) -> Control:
    return Control("photocraft", ROLLOUT, tag, "", percentage, tuple(steps), paused_at_ms)


def test_without_controls_the_listed_release_is_served_as_it_is() -> None:
    served = serve(V1_3, POOL, (), "stable", NOW)
    assert served.latest_release is V1_3 and served.rollout is None


def test_a_yank_falls_back_to_the_newest_release_not_yanked() -> None:
    assert serve(V1_3, POOL, [yank("v1.3.0")], "stable", NOW).latest_release is V1_2
    assert serve(V1_3, POOL, [yank("v1.3.0"), yank("v1.2.0")], "beta", NOW).latest_release is V1_1


def test_yanking_every_release_serves_none() -> None:
    served = serve(V1_3, POOL, [yank(r.tag) for r in POOL], "stable", NOW)
    assert served == type(served)(None, None)


def test_a_yank_of_an_older_release_keeps_the_listed_one() -> None:
    assert serve(V1_3, POOL, [yank("v1.1.0")], "stable", NOW).latest_release is V1_3


def test_a_hold_serves_nothing_newer_than_its_tag() -> None:
    assert serve(V1_3, POOL, [hold("v1.2.0")], "stable", NOW).latest_release is V1_2


def test_a_hold_on_a_deleted_release_serves_the_newest_below_it() -> None:
    # v1.2.0 is gone from GitHub: neither listed nor in the history.
    assert serve(V1_3, (V1_3, V1_1), [hold("v1.2.0")], "stable", NOW).latest_release is V1_1


def test_a_hold_scoped_to_beta_leaves_stable_alone() -> None:
    assert serve(V1_3, POOL, [hold("v1.1.0", "beta")], "stable", NOW).latest_release is V1_3
    assert serve(V1_3, POOL, [hold("v1.1.0", "beta")], "beta", NOW).latest_release is V1_1


def test_a_rollout_keeps_the_release_before_and_offers_the_new_one() -> None:
    served = serve(V1_3, POOL, [rollout("v1.3.0", 25)], "stable", NOW)
    assert served.latest_release is V1_2
    assert served.rollout == Rollout(V1_3, 25)


def test_a_rollout_holds_back_what_is_newer_than_its_release() -> None:
    v1_4 = tagged("v1.4.0", day=4)
    served = serve(v1_4, (v1_4, *POOL), [rollout("v1.3.0", 25)], "stable", NOW)
    assert (served.latest_release, served.rollout) == (V1_2, Rollout(V1_3, 25))


def test_a_rollout_at_100_changes_nothing() -> None:
    served = serve(V1_3, POOL, [rollout("v1.3.0", 100)], "stable", NOW)
    assert (served.latest_release, served.rollout) == (V1_3, None)


def test_a_yank_of_the_rolled_out_release_ends_the_offer() -> None:
    served = serve(V1_3, POOL, [rollout("v1.3.0", 25), yank("v1.3.0")], "stable", NOW)
    assert (served.latest_release, served.rollout) == (V1_2, None)


def test_a_rollout_of_a_tag_not_out_yet_offers_nothing_until_it_is() -> None:
    served = serve(V1_2, (V1_2, V1_1), [rollout("v1.3.0", 25)], "stable", NOW)
    assert (served.latest_release, served.rollout) == (V1_2, None)
    served = serve(V1_3, POOL, [rollout("v1.3.0", 25)], "stable", NOW)
    assert served.rollout == Rollout(V1_3, 25)


def test_a_schedule_moves_the_percentage_at_its_instants_and_a_pause_stops_it() -> None:
    step1, step2 = Step(NOW + 1000, 50), Step(NOW + 2000, 100)
    control = rollout("v1.3.0", 5, step1, step2)
    assert [control.percentage_at(NOW + d) for d in (0, 999, 1000, 1999, 2000)] == [5, 5, 50, 50, 100]
    assert next_change_ms([control], NOW) == NOW + 1000
    assert next_change_ms([control], NOW + 1000) == NOW + 2000
    assert next_change_ms([control], NOW + 2000) is None
    assert serve(V1_3, POOL, [control], "stable", NOW + 2000).latest_release is V1_3
    paused = replace(control, paused_at_ms=NOW + 1500)
    assert paused.percentage_at(NOW + 5000) == 50 and next_change_ms([paused], NOW) is None


def test_a_schedule_reads_back_as_written() -> None:
    steps = parse_schedule("2026-12-02T09:00Z 25\n\n  2026-12-04T10:00:00+01:00 100%  \n")
    assert steps == (
        Step(datetime_to_ms(datetime(2026, 12, 2, 9, tzinfo=UTC)), 25),
        Step(datetime_to_ms(datetime(2026, 12, 4, 9, tzinfo=UTC)), 100),
    )
    assert parse_schedule(format_schedule(steps)) == steps


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("2026-12-02T09:00Z 25\n2026-12-01T09:00Z 50", "Line 2: 2026-12-01T09:00Z is not later than line 1"),
        ("2026-12-02T09:00Z 25\n2026-12-03T09:00Z 10", "goes back from 25 to 10"),
        ("2026-12-02T09:00Z 150", "give a whole percentage from 0 to 100, not '150'"),
        ("2026-12-02T09:00Z -5", "not '-5'"),
        ("2026-12-02T09:00 25", "not an instant with its time zone"),
        ("tomorrow 25", "not an instant with its time zone"),
        ("2026-12-02T09:00Z", "write an instant and a percentage"),
        ("10000-01-01T00:00Z 5", "not an instant"),
    ],
)
def test_a_schedule_that_cant_be_read_or_goes_back_is_refused_with_what_to_change(
    text: str, says: str
) -> None:
    with pytest.raises(ScheduleRefused, match=None) as refused:
        parse_schedule(text)
    assert says in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_check_refuses_each_contradiction_with_what_to_change() -> None:
    found = problems(
        [
            yank("v1.2.0"),
            hold("v1.2.0"),  # on a yanked tag
            rollout("v1.3.0", 150),
            Control("photocraft", YANK, "v1.1.0", "beta"),  # a yank has no channel
            hold("v1.1.0", "stable"),  # a second hold on stable
            yank("v1.2.0"),  # twice
            Control("photocraft", HOLD, "v1.1.0", "", 5),  # a hold has no percentage
            rollout("v1.3.0", 50, Step(NOW, 25)),  # the schedule starts below
        ]
    )
    said = {(p.index, p.field): p.message for p in found}
    assert "is yanked: hold at another tag" in said[(1, "tag")]
    assert said[(2, "percentage")] == "Give a percentage from 0 to 100, not 150."
    assert "leave the channel empty" in said[(3, "channel")]
    assert "already has a hold on the stable channel" in said[(4, "channel")]
    assert "already yanked" in said[(5, "tag")]
    assert "Only a rollout has a percentage" in said[(6, "percentage")]
    assert "below the starting 50 %" in said[(7, "schedule")]
    assert "already has a rollout on the stable channel" in said[(7, "channel")]


def test_a_rollout_of_a_yanked_tag_is_allowed_the_yank_wins() -> None:
    assert problems([rollout("v1.3.0", 25), yank("v1.3.0")]) == []


def test_a_tag_the_host_knows_no_release_of_is_no_problem_but_waits() -> None:
    """Accepted (a control for a release not published yet), with a warning naming the tags the
    host knows, newest first, and the closest one when the tag looks like a typo of it."""
    known = {"photocraft": frozenset({"v1.2.0", "v1.3.0", "nightly", "v1.10.0"})}
    controls = [hold("v1.3.0"), rollout("v1.3.1", 5), yank("v1.3.O"), Control("vectorcraft", YANK, "v2.0.0")]
    assert problems(controls) == []
    found = {w.index: w.message for w in waiting(controls, known)}
    assert sorted(found) == [1, 2, 3]
    assert found[1].startswith(
        "photocraft has no release tagged v1.3.1 that this host knows "
        "(it knows v1.10.0, v1.3.0, v1.2.0, nightly): the control is kept, "
        "and applied the moment the release appears."
    )
    assert "Did you mean v1.3.0?" in found[2]
    no_release = "vectorcraft has no release tagged v2.0.0 that this host knows (it knows no release"
    assert no_release in found[3]
    assert [tag_known(c, known) for c in controls] == [True, False, False, False]


def test_the_warning_names_a_few_tags_then_an_ellipsis() -> None:
    known = {"photocraft": frozenset(f"v1.{minor}.0" for minor in range(10))}
    (found,) = waiting([hold("v2.0.0")], known)
    assert "(it knows v1.9.0, v1.8.0, v1.7.0, v1.6.0, v1.5.0, v1.4.0, …)" in found.message


def test_a_rollout_saved_before_its_release_starts_at_its_percentage_when_it_appears() -> None:
    """Before: nothing changes (the listed release is served, no rollout). The moment the
    release is listed: offered at the rollout's percentage, the one before it stays latest."""
    staged = [rollout("v1.3.0", 25)]
    before = serve(V1_2, (V1_2, V1_1), staged, "stable", NOW)
    assert (before.latest_release, before.rollout) == (V1_2, None)
    after = serve(V1_3, (V1_2, V1_1), staged, "stable", NOW)
    assert after.latest_release is V1_2 and after.rollout == Rollout(V1_3, 25)
