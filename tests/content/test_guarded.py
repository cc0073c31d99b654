"""A guarded policy in one web process on the test's clock (the runtime reads the state file and
the database at every request): the watch takes a step only on healthy counts, pauses on a
failure share over the threshold (written once, served at once, never moving on), tells the
webhook; the admin shows the pause as a banner and resumes it."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.api.guard_watch import GuardWatch
from craft_apps.api.runtime import runtime
from craft_apps.content.policy_models import GUARD_AUTHOR, ReleasePolicy
from craft_apps.kernel.instants import datetime_to_ms
from craft_apps.reports.counts import OutcomeCounts, ReleaseCounts
from craft_apps.reports.notify import Notifier
from craft_apps.testing.clock import FakeClock
from tests.content.policy_site import (  # noqa: F401 (fixtures)
    ADMIN,
    NEW,
    SINCE,
    admin_client_fixture,
    clock_fixture,
    host_fixture,
)
from tests.controls.support import served
from tests.support import RELEASE_INFO_URL

pytestmark = pytest.mark.django_db

SCHEDULE = "+0h 5, +1h 25, +2h 100"


def counts(installed: int, failed: int) -> list[ReleaseCounts]:
    outcomes = {"installed": OutcomeCounts(installed, installed), "failed": OutcomeCounts(failed, failed)}
    return [ReleaseCounts("photocraft", "0.5.0", outcomes)]


class Posts:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.done = threading.Event()

    def __call__(self, url: str, text: str, timeout_s: float) -> None:
        self.texts.append(f"{url} {text}")
        self.done.set()


def guarded(url: str = "") -> ReleasePolicy:
    row = ReleasePolicy(app_key="photocraft", channel="stable", policy="guarded", schedule=SCHEDULE)
    row.reason, row.notify_url = "guard it", url
    row.full_clean()
    row.save()
    ReleasePolicy.objects.filter(pk=row.pk).update(effective_from=SINCE)
    return row


def watch(fake: FakeClock, found: list[ReleaseCounts], posts: Posts | None = None) -> GuardWatch:
    web = runtime()
    notifier = Notifier(sender=posts or Posts(), sleep=lambda s: None)
    return GuardWatch(
        web.answers.snapshot,
        web.feed.channel_apps,
        web.feed.controls,
        fake.now_ms,
        notifier,
        lambda apps: found,
    )


def rollout(client: Client) -> tuple[str, int] | None:
    return served(client.get(RELEASE_INFO_URL).content).rollout


def at(fake: FakeClock, hours: float) -> None:
    assert NEW.published_at is not None
    fake.set_ms(datetime_to_ms(NEW.published_at + timedelta(hours=hours)))


def test_a_step_waits_for_the_minimum_then_is_taken_on_healthy_counts(host: Path, clock: FakeClock):
    guarded()
    client = Client()
    at(clock, 1.5)
    assert rollout(client) == ("v0.5.0", 5)
    assert watch(clock, counts(150, 0)).check() == [], "150 of the 200 installs: the step waits"
    assert rollout(client) == ("v0.5.0", 5)
    taken = watch(clock, counts(245, 5)).check()
    assert [d.percentage for d in taken] == [25]
    assert rollout(client) == ("v0.5.0", 25)


def test_a_share_over_the_threshold_pauses_once_is_served_at_once_and_never_moves_on(
    host: Path,
    clock: FakeClock,
):
    guarded("http://hooks.invalid/x")
    client = Client()
    at(clock, 1.5)
    assert rollout(client) == ("v0.5.0", 5)
    posts, other = Posts(), Posts()
    first = watch(clock, counts(238, 12), posts).check()
    second = watch(clock, counts(238, 12), other).check()
    assert [(d.percentage, d.paused) for d in first] == [(5, True)] and second == [], "written once"
    row = ReleasePolicy.objects.get()
    assert row.changed_by == GUARD_AUTHOR and row.marks()["v0.5.0"].paused
    at(clock, 3)
    assert watch(clock, counts(5000, 0)).check() == []
    assert rollout(client) == ("v0.5.0", 5), "paused: not even the 100 % step moves it"
    assert posts.done.wait(5), "the post is made on the notifier's thread"
    assert "http://hooks.invalid/x Craft apps: photocraft v0.5.0 on stable" in posts.texts[0]
    assert "12 of 250 installs failing (4.8 %)" in posts.texts[0] and other.texts == []


def test_the_admin_shows_the_pause_and_resumes_it(host: Path, clock: FakeClock, admin_client: Client):
    row = guarded()
    at(clock, 1.5)
    assert rollout(admin_client) == ("v0.5.0", 5)
    watch(clock, counts(238, 12)).check()
    page = admin_client.get(f"{ADMIN}/{row.pk}/change/").content.decode()
    assert "the guarded rollout paused itself at 5 %" in page and "12 of 250 installs failing" in page
    listing = admin_client.get(f"{ADMIN}/").content.decode()
    assert "v0.5.0: paused by its guard at 5 %" in listing
    form = {"action": "resume_guarded", "_selected_action": str(row.pk)}
    assert admin_client.post(f"{ADMIN}/", form).status_code == 302
    mark = ReleasePolicy.objects.get().marks()["v0.5.0"]
    assert not mark.paused and mark.percentage == 5
    assert watch(clock, counts(238, 12)).check() == [], "judged on the reports after the resume"
    moved = watch(clock, counts(450, 14)).check()
    assert [d.percentage for d in moved] == [25]
    assert rollout(admin_client) == ("v0.5.0", 25)
