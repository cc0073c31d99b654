"""A release policy in the endpoint's ``AnswerCache`` (a web runtime on the fake clock, the feed
reading the test's database at every request): a staged release's step moves its percentage at
its instant to the millisecond, on each channel, with one encoding per channel and a signed
order that moves with it; and a step applies while the state file can't be read."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.api.runtime import runtime
from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.host.store import DB_FILENAME
from craft_apps.kernel.domain import AppState
from craft_apps.kernel.instants import datetime_to_ms, ms_to_datetime
from craft_apps.testing.clock import FakeClock
from tests.controls.support import V110, V120, V130, served
from tests.support import RELEASE_INFO_URL, publish, publish_history

pytestmark = pytest.mark.django_db

BETA = RELEASE_INFO_URL + "?channel=beta"
HOUR_MS = 3_600_000


def staged_host(state_dir: Path, clock: FakeClock) -> int:
    """v1.3.0 published an hour before the clock's now, v1.2.0 and v1.1.0 long before; a staged
    policy on both channels since two hours ago. Returns when v1.3.0 reaches 100 %."""
    now = ms_to_datetime(clock.now_ms())
    new = replace(V130, published_at=now - timedelta(hours=1))
    old, older = (
        replace(V120, published_at=now - timedelta(days=9)),
        replace(V110, published_at=now - timedelta(days=10)),
    )
    publish(state_dir, {"photocraft": AppState(latest_release=new, fetched_ms=clock.now_ms())})
    publish_history(state_dir, "photocraft", (new, old, older))
    for channel in ("stable", "beta"):
        ReleasePolicy.objects.create(
            app_key="photocraft", channel=channel, policy="staged", schedule="+0h 5, +2h 100", reason="brakes"
        )
    ReleasePolicy.objects.update(effective_from=now - timedelta(hours=2))
    return datetime_to_ms(new.published_at) + 2 * HOUR_MS  # type: ignore[arg-type]


def both(client: Client) -> tuple[tuple[object, object], tuple[object, object]]:
    stable, beta = served(client.get(RELEASE_INFO_URL).content), served(client.get(BETA).content)
    return (stable.latest, stable.rollout), (beta.latest, beta.rollout)


def test_a_staged_releases_step_applies_at_its_instant_with_one_encoding_per_channel(
    web: Path, fake_clock: FakeClock
):
    full_ms = staged_host(web, fake_clock)
    client = Client()
    at_5 = ("v1.2.0", ("v1.3.0", 5))
    assert both(client) == (at_5, at_5)
    answers = runtime().answers
    before = answers.encoded
    fake_clock.set_ms(full_ms - 1)
    for _ in range(3):
        assert both(client) == (at_5, at_5), "not a millisecond early"
    assert answers.encoded == before, "nothing encoded anew before the step"
    assert answers.answer().order_ms < full_ms
    fake_clock.set_ms(full_ms)
    for _ in range(3):
        assert both(client) == (("v1.3.0", None), ("v1.3.0", None)), "at the instant"
    assert answers.encoded - before == 1, "the stable answer once; beta lists the same, so takes its bytes"
    assert answers.answer().order_ms == full_ms, "the signed order reflects the step"


def test_a_step_applies_while_the_state_file_cant_be_read(web: Path, fake_clock: FakeClock):
    full_ms = staged_host(web, fake_clock)
    client = Client()
    assert served(client.get(RELEASE_INFO_URL).content).rollout == ("v1.3.0", 5)
    (web / DB_FILENAME).unlink()
    fake_clock.set_ms(full_ms)
    after = served(client.get(RELEASE_INFO_URL).content)
    assert (after.latest, after.rollout) == ("v1.3.0", None), "the last good answer's releases, stepped"
