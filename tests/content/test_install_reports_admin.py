"""The admin's "Install reports" page: per app, the adoption chart and the failure shares
against the guarded policy's threshold, inline SVG; for users who may view the policies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from craft_apps.admin.reports_chart import app_charts
from craft_apps.testing.clock import FakeClock
from tests.content.policy_site import (  # noqa: F401 (fixtures)
    admin_client_fixture,
    clock_fixture,
    host_fixture,
)
from tests.content.reports_chart_support import guarded, two_releases

pytestmark = pytest.mark.django_db

PAGE = "/admin/craft_apps/releasepolicy/install-reports/"


def test_the_page_draws_each_apps_charts_inline(host: Path, clock: FakeClock, admin_client: Client) -> None:
    two_releases(host, clock)
    guarded(2.0)
    page = admin_client.get(PAGE)
    assert page.status_code == 200
    text = page.content.decode()
    assert text.count('role="img"') == 2, "photocraft's two charts; the other app has no report yet"
    assert "photocraft 0.5.0 on" in text and ": 60 new installs" in text
    assert "photocraft 0.5.0: 10.0 % failing of 100 installs" in text
    assert "threshold 2 %" in text
    assert "no install report yet" in text
    assert "<script" not in text.split('id="content-main"')[1], "nothing but markup"


def test_the_charts_follow_the_clocks_days(host: Path, clock: FakeClock) -> None:
    two_releases(host, clock)
    [photocraft, _] = app_charts(clock.now_ms(), days=2)
    assert photocraft.adoption is not None
    assert "0.4.0" not in photocraft.adoption, "its installs were three days ago"


def test_the_index_and_the_policies_link_to_it(admin_client: Client) -> None:
    for url in ("/admin/craft_apps/", "/admin/craft_apps/releasepolicy/"):
        assert f'href="{PAGE}"' in admin_client.get(url).content.decode(), url


def test_a_user_who_may_not_view_the_policies_is_refused(
    host: Path, client: Client, django_user_model: Any
) -> None:
    staff = django_user_model.objects.create(username="staff", is_staff=True)
    client.force_login(staff)
    assert client.get(PAGE).status_code == 403
