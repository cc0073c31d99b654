"""The controls in the endpoint's ``AnswerCache`` (a web runtime on the fake clock, the feed
reading the test's database at every request): controls that change nothing leave the answer's
bytes as they were, a schedule's step moves the percentage at its instant to the millisecond
and costs one encoding per channel, an edit applies while the state file can't be read, and a
hold scoped to beta leaves stable alone."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.api.answer import AnswerCache
from craft_apps.api.runtime import runtime
from craft_apps.content.models import AppChannel
from craft_apps.controls.rules import Step
from craft_apps.host.store import DB_FILENAME
from craft_apps.kernel.domain import AppState, Release
from craft_apps.testing.clock import FakeClock
from tests.controls.support import V110, V120, V130, hold, rollout, served, yank
from tests.support import RELEASE_INFO_URL, S, publish, publish_history, release

pytestmark = pytest.mark.django_db

T0 = 1_790_000_000_000
BETA = RELEASE_INFO_URL + "?channel=beta"
RC = replace(release("1.4.0-rc.1"), prerelease=True)


def warm(state_dir: Path, history: tuple[Release, ...] = (V130, V120, V110)) -> None:
    publish(state_dir, {"photocraft": AppState(latest_release=V130, fetched_ms=T0)})
    publish_history(state_dir, "photocraft", history)


def bodies(client: Client) -> dict[str, bytes]:
    """Each channel's answer in each coding."""
    return {
        f"{url} {coding}": client.get(url, HTTP_ACCEPT_ENCODING=coding).content
        for url in (RELEASE_INFO_URL, BETA)
        for coding in ("", "br", "gzip")
    }


def test_controls_that_change_nothing_leave_the_answer_byte_for_byte(web: Path):
    warm(web)
    client = Client()
    before = bodies(client)
    assert all(b"rollout" not in body for key, body in before.items() if key.endswith(" "))
    held = hold("v1.3.0")  # at the latest itself
    rollout("v1.2.0", 100)  # complete: no longer in force
    yank("v1.2.0")  # a release older than the one served
    yank("v1.0.0")  # a tag photocraft has no release of
    assert bodies(client) == before
    held.delete()
    yank("v1.3.0")
    changed = served(client.get(RELEASE_INFO_URL).content)
    assert changed.latest == "v1.1.0", "a control that changes something does"


def test_a_schedules_step_moves_the_percentage_at_its_instant_with_one_encoding_per_channel(
    web: Path, fake_clock: FakeClock
):
    warm(web, history=(RC, V130, V120, V110))
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    at_ms = fake_clock.now_ms() + 60 * S
    schedule = Step(at_ms, 50).line()
    rollout("v1.3.0", 10, channel="stable", schedule=schedule)
    rollout("v1.4.0-rc.1", 10, channel="beta", schedule=schedule)
    client = Client()

    def percentages() -> tuple[object, object]:
        stable, beta = served(client.get(RELEASE_INFO_URL).content), served(client.get(BETA).content)
        assert (stable.latest, beta.latest) == ("v1.2.0", "v1.3.0")
        return stable.rollout, beta.rollout

    assert percentages() == (("v1.3.0", 10), ("v1.4.0-rc.1", 10))
    answers = runtime().answers
    before = answers.encoded
    fake_clock.set_ms(at_ms - 1)
    for _ in range(3):
        assert percentages() == (("v1.3.0", 10), ("v1.4.0-rc.1", 10)), "not a millisecond early"
    assert answers.encoded == before, "nothing encoded anew before the step"
    fake_clock.set_ms(at_ms)
    for _ in range(3):
        assert percentages() == (("v1.3.0", 50), ("v1.4.0-rc.1", 50)), "at the instant"
    assert answers.encoded - before == 2, "once per channel"


def test_an_edit_while_the_state_file_cant_be_read_applies_to_the_last_good_answer(web: Path, caplog):
    warm(web)
    client = Client()
    assert served(client.get(RELEASE_INFO_URL).content).latest == "v1.3.0"
    (web / DB_FILENAME).unlink()
    with caplog.at_level(logging.WARNING, logger="craft_apps.api.views"):
        kept = served(client.get(RELEASE_INFO_URL).content)
    assert kept.latest == "v1.3.0", "the last good answer"
    assert any("serving the last good answer" in r.getMessage() for r in caplog.records)
    yank("v1.3.0")
    for url in (RELEASE_INFO_URL, BETA):
        yanked = served(client.get(url).content)
        assert yanked.latest == "v1.2.0" and not yanked.mentions("v1.3.0"), url
        assert yanked.fetched, "still the last good answer's releases"


def test_a_hold_scoped_to_beta_leaves_stable_as_it_was(web: Path):
    warm(web, history=(RC, V130, V120, V110))
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    client = Client()
    stable = client.get(RELEASE_INFO_URL)
    assert served(client.get(BETA).content).latest == "v1.4.0-rc.1"
    hold("v1.2.0", channel="beta")
    assert served(client.get(BETA).content).latest == "v1.2.0"
    again = client.get(RELEASE_INFO_URL)
    assert again.content == stable.content and again["ETag"] == stable["ETag"]


def test_two_hosts_with_the_same_state_serve_the_same_bytes_and_step_together(
    web: Path, tmp_path: Path, fake_clock: FakeClock
) -> None:
    """The schedule depends only on the clock: two hosts (each its own state file, the same
    rows; each its own runtime) serve one answer before a step and one after it."""
    other = tmp_path / "other-host"
    warm(web)
    warm(other)
    at_ms = fake_clock.now_ms() + 60 * S
    rollout("v1.3.0", 10, schedule=Step(at_ms, 50).line())
    yank("v1.1.0")

    def both() -> tuple[bytes, bytes]:
        here = runtime().answers.answer().body

        there = AnswerCache(
            lambda path: runtime().store(other),
            runtime().notices,
            0.0,
            controls=runtime().feed.controls,
            now_ms=fake_clock.now_ms,
        )
        return here, there.answer().body

    before = both()
    assert before[0] == before[1] and served(runtime().answers.answer().body).rollout == ("v1.3.0", 10)
    fake_clock.set_ms(at_ms)
    after = both()
    assert after[0] == after[1] != before[0]
    assert served(runtime().answers.answer().body).rollout == ("v1.3.0", 50)
