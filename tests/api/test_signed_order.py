"""Signed answers carry their order, the latest instant their content reflects: the answer from
before a yank, replayed after it to a launcher that saw the yank, is refused by the reference
verifier and by ``craft_apps_verify`` (an answer the v1 rule took for up to two periods); so is
the yank's answer once the yank is deleted, and an answer from before GitHub deleted a release.
The answers are the endpoint's own, through Django's full request path; the controls and the
instant they were last written are handed to the answer cache as the notices feed hands them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError
from django.test import Client

from craft_apps.api.answer import AnswerCache
from craft_apps.api.representation import Refiner
from craft_apps.api.runtime import runtime
from craft_apps.content.feed import NoticesFeed
from craft_apps.content.models import ReleaseControl
from craft_apps.controls.rules import YANK, Control
from craft_apps.kernel import signing
from craft_apps.kernel.domain import AppState
from tests.api.signed_support import replaying, verify_command
from tests.api.support import T0, decoded, warm
from tests.signing.vectors import KEY_A
from tests.support import RELEASE_INFO_URL as URL
from tests.support import publish

YANKED = (Control("photocraft", YANK, "v0.5.0"),)


class Site:
    """The controls and their last write as the feed would hand them to the answer cache."""

    def __init__(self) -> None:
        self.controls: tuple[Control, ...] = ()
        self.changed_ms: int | None = None

    def install(self) -> None:
        rt = runtime()
        rt.answers = AnswerCache(
            rt.store,
            rt.notices,
            recheck_s=0.0,
            refiner=Refiner(start=lambda job: job(), after_s=0.0),
            controls=lambda: self.controls,
            now_ms=rt.clock.now_ms,
            controls_changed_ms=lambda: self.changed_ms,
        )

    def edit(self, controls: tuple[Control, ...], at_ms: int | None) -> None:
        self.controls, self.changed_ms = controls, at_ms


@pytest.fixture
def signed_site(site: Path, settings) -> Site:
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "SIGNING_KEY": signing.private_key_text(KEY_A)}
    warm(site)
    controlled = Site()
    controlled.install()
    return controlled


def verdict(response: Any, last_order: int | None) -> signing.Verdict:
    return signing.verify(decoded(response), response.headers, [KEY_A.public], int(time.time()), last_order)


def order_of(response: Any) -> int:
    found = verdict(response, None)
    assert found.accepted and found.order is not None, found
    return int(found.order)


def test_the_answer_from_before_a_yank_is_refused_after_it(signed_site: Site):
    before = Client().get(URL)
    signed_site.edit(YANKED, T0 + 60_000)
    after = Client().get(URL)
    assert b'"latest_release":null' in decoded(after) and decoded(after) != decoded(before)
    seen = order_of(after)
    assert seen == T0 + 60_000 > order_of(before)

    assert verdict(before, seen).reason == "rollback"
    # The v1 rule, which launchers built before the order keep, took it: the same period.
    v1 = signing.verify_v1(decoded(before), before.headers, [KEY_A.public], int(time.time()))
    assert v1.accepted and v1.signed == verdict(after, None).signed
    with (
        replaying(bytes(before.content), list(before.headers.items())) as url,
        pytest.raises(CommandError) as refused,
    ):
        verify_command(url, seen)
    assert str(refused.value).startswith(f"refused: rollback (key {KEY_A.key_id}, signed ")
    with replaying(bytes(after.content), list(after.headers.items())) as url:
        assert verify_command(url, seen).startswith(f"accepted (key {KEY_A.key_id}")


def test_deleting_the_yank_orders_the_answer_after_the_yank(signed_site: Site):
    """The same bytes as before the yank, with a higher order: the yank's answer is then the
    one refused; the order never goes back when a control is deleted."""
    before = Client().get(URL)
    signed_site.edit(YANKED, T0 + 60_000)
    yanked = Client().get(URL)
    signed_site.edit((), T0 + 120_000)
    restored = Client().get(URL)
    assert decoded(restored) == decoded(before)
    assert order_of(restored) == T0 + 120_000 > order_of(yanked) > order_of(before)
    assert verdict(restored, order_of(yanked)).accepted
    assert verdict(yanked, order_of(restored)).reason == "rollback"
    assert verdict(before, order_of(restored)).reason == "rollback"


def test_an_answer_from_before_github_deleted_a_release_is_refused(signed_site: Site, site: Path):
    before = Client().get(URL)
    publish(site, {"photocraft": AppState(latest_release=None, fetched_ms=T0 + 90_000)})
    after = Client().get(URL)
    assert b'"latest_release":null' in decoded(after)
    assert order_of(after) == T0 + 90_000
    assert verdict(before, order_of(after)).reason == "rollback"
    assert verdict(after, order_of(before)).accepted


def test_every_process_with_the_same_state_signs_the_same_bytes(signed_site: Site):
    """Two answer caches (two workers, or two hosts) made at different times from the same
    state, controls and last write send the same header: the order is no clock of theirs."""
    signed_site.edit(YANKED, T0 + 60_000)
    first = Client().get(URL)
    signed_site.install()  # another process, later
    second = Client().get(URL)
    assert first.content == second.content
    assert first[signing.HEADER] == second[signing.HEADER]


def test_without_the_edit_instant_the_next_fetch_orders_an_edit(signed_site: Site, site: Path):
    """A process that hasn't read the database (no edit instant: the kept controls only) signs
    the yank's answer with the order of the fetch before it (never lower); the next fetch orders it."""
    before = Client().get(URL)
    signed_site.edit(YANKED, None)
    yanked = Client().get(URL)
    assert order_of(yanked) == order_of(before) and verdict(before, order_of(yanked)).accepted
    publish(site, {"photocraft": AppState(latest_release=None, fetched_ms=T0 + 30_000)})
    fetched = Client().get(URL)
    assert order_of(fetched) == T0 + 30_000 > order_of(before)
    assert verdict(before, order_of(fetched)).reason == "rollback"


@pytest.mark.django_db
def test_the_feed_hands_over_the_instant_of_every_write_deletions_too(site: Path, settings, install_runtime):
    """The real notices feed on the site's database: a yank's answer is ordered after the answer
    before it, and the answer once the yank is deleted after the yank's, though its body is the
    one from before the yank (the version marker is the last write's instant)."""
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "SIGNING_KEY": signing.private_key_text(KEY_A)}
    feed = NoticesFeed(recheck_s=0.0, runner=lambda look: look(), keep_controls=False)
    install_runtime(recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0), feed=feed)
    warm(site)
    before = Client().get(URL)
    yank = ReleaseControl.objects.create(app_key="photocraft", action=YANK, tag="v0.5.0", reason="bad")
    after = Client().get(URL)
    assert b'"latest_release":null' in decoded(after)
    assert order_of(after) > order_of(before)
    assert verdict(before, order_of(after)).reason == "rollback"
    yank.delete()
    restored = Client().get(URL)
    assert decoded(restored) == decoded(before) and order_of(restored) > order_of(after)
    assert verdict(after, order_of(restored)).reason == "rollback"
