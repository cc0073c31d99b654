"""The purge settings (``conf.purge_target``) and their checks: an incomplete purge fails loudly
(E151, E152) and is off, the token is a secret never shown, the environment works too."""

from __future__ import annotations

import os
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from craft_apps.checks import check_settings, placeholder_problems
from craft_apps.conf import DEFAULT_CLOUDFLARE_API_URL, app_settings

pytestmark = pytest.mark.usefixtures("clean_environment")

TOKEN = "s3cret-cloudflare-token"


def messages(**craft_apps: object) -> list[tuple[str | None, str]]:
    with override_settings(CRAFT_APPS=craft_apps):
        return [(message.id, f"{message.msg} {message.hint}") for message in check_settings()]


def test_off_by_default_with_no_message():
    assert app_settings.CDN_PURGE is None
    assert messages() == []


def test_http_purge_from_the_environment(monkeypatch):
    monkeypatch.setenv("CRAFT_APPS_CDN_PURGE_KIND", "HTTP")
    monkeypatch.setenv("CRAFT_APPS_CDN_PURGE_URL", "http://127.0.0.1:6081{path}")
    monkeypatch.setenv("CRAFT_APPS_CDN_PURGE_METHOD", "ban")
    monkeypatch.setenv("CRAFT_APPS_CDN_PUBLIC_URL", "https://updates.example.com/")
    target = app_settings.CDN_PURGE
    assert target is not None
    assert (target.kind, target.url, target.method, target.public_host, target.timeout_s) == (
        "http",
        "http://127.0.0.1:6081{path}",
        "BAN",
        "updates.example.com",
        5.0,
    )


def test_cloudflare_defaults_to_the_public_api():
    with override_settings(
        CRAFT_APPS={
            "CDN_PURGE_KIND": "cloudflare",
            "CDN_PURGE_TOKEN": TOKEN,
            "CDN_PURGE_ZONE": "zone-1",
            "CDN_PUBLIC_URL": "https://updates.example.com",
        }
    ):
        target = app_settings.CDN_PURGE
        assert target is not None and target.url == DEFAULT_CLOUDFLARE_API_URL
        assert TOKEN not in repr(target)


@pytest.mark.parametrize(
    ("settings", "missing"),
    [
        ({"CDN_PURGE_KIND": "http", "CDN_PUBLIC_URL": "https://u.example"}, ["CDN_PURGE_URL"]),
        ({"CDN_PURGE_KIND": "http", "CDN_PURGE_URL": "http://v{path}"}, ["CDN_PUBLIC_URL"]),
        (
            {"CDN_PURGE_KIND": "cloudflare", "CDN_PUBLIC_URL": "https://u.example"},
            ["CDN_PURGE_TOKEN", "CDN_PURGE_ZONE"],
        ),
        ({"CDN_PURGE_KIND": "cloudflare", "CDN_PURGE_TOKEN": TOKEN}, ["CDN_PUBLIC_URL", "CDN_PURGE_ZONE"]),
    ],
)
def test_an_incomplete_purge_is_an_error_naming_what_is_missing(settings: dict[str, str], missing: list[str]):
    found = messages(**settings)
    assert [id for id, _ in found] == ["craft_apps.E151"]
    assert all(f"CRAFT_APPS_{key}" in found[0][1] for key in missing), found
    assert TOKEN not in found[0][1]
    with override_settings(CRAFT_APPS=settings):
        assert app_settings.CDN_PURGE is None  # never half on


def test_a_template_without_path_is_an_error():
    found = messages(
        CDN_PURGE_KIND="http", CDN_PURGE_URL="http://127.0.0.1:6081/", CDN_PUBLIC_URL="https://u.example"
    )
    assert [id for id, _ in found] == ["craft_apps.E152"]


def test_a_kind_or_method_not_known_is_an_error_and_purge_stays_off():
    found = messages(CDN_PURGE_KIND="akamai", CDN_PURGE_METHOD="DELETE")
    assert [id for id, _ in found] == ["craft_apps.E001", "craft_apps.E001"]
    assert "'akamai'" in found[0][1] and "'DELETE'" in found[1][1]


def test_the_token_is_a_secret_the_placeholder_check_names_without_its_value():
    with override_settings(CRAFT_APPS={"CDN_PURGE_TOKEN": "CHANGE-ME-please"}):
        problems = placeholder_problems()
    assert [p.details["where"] for p in problems] == [
        "CRAFT_APPS['CDN_PURGE_TOKEN'] (environment variable CRAFT_APPS_CDN_PURGE_TOKEN)"
    ]


def status_line(**craft_apps: object) -> str:
    out = StringIO()
    with override_settings(CRAFT_APPS={"STATE_DIR": os.environ["CRAFT_APPS_STATE_DIR"], **craft_apps}):
        call_command("craft_apps_status", stdout=out)
    return next(line for line in out.getvalue().splitlines() if line.startswith("cdn purge"))


@pytest.mark.django_db
def test_the_status_says_when_purge_is_off_or_misconfigured_and_never_the_token():
    assert "off: a change reaches launchers behind a CDN when its copy is due" in status_line()
    line = status_line(CDN_PURGE_KIND="cloudflare", CDN_PURGE_TOKEN=TOKEN)
    assert "off: misconfigured (cdn_purge_incomplete" in line and TOKEN not in line
    line = status_line(
        CDN_PURGE_KIND="http",
        CDN_PURGE_URL="http://user:pw@127.0.0.1:6081{path}",
        CDN_PURGE_TOKEN=TOKEN,
        CDN_PUBLIC_URL="https://u.example",
    )
    assert "http PURGE to http://127.0.0.1:6081/ (token set); 0 purged, 0 retried, 0 given up" in line
    assert TOKEN not in line and "pw" not in line
