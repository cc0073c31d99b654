"""Every system check id, with its message and hint."""

from __future__ import annotations

import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.checks.registry import registry
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from craft_apps.checks import check_settings

REDIS_ALIAS = {
    "BACKEND": "django_redis.cache.RedisCache",
    "LOCATION": "redis://127.0.0.1:6399/0?client_name=craft_apps_poller",
    "OPTIONS": {
        "CONNECTION_POOL_KWARGS": {"max_connections": 2},
        "SOCKET_CONNECT_TIMEOUT": 3,
        "SOCKET_TIMEOUT": 5,
    },
}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path: Path):
    for name in list(os.environ):
        if name.startswith("CRAFT_APPS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CRAFT_APPS_STATE_DIR", str(tmp_path / "state"))


def ids(**craft_apps) -> list[str | None]:
    with override_settings(CRAFT_APPS=craft_apps):
        return [message.id for message in check_settings()]


def messages(**craft_apps):
    with override_settings(CRAFT_APPS=craft_apps):
        return check_settings()


def test_a_default_configuration_has_no_problems():
    assert ids() == []


def test_demo_site_check_is_clean():
    out = StringIO()
    call_command("check", stdout=out)
    assert "no issues" in out.getvalue()


def test_the_checks_have_their_own_tag_and_none_is_deploy_only():
    every = registry.get_checks(include_deployment_checks=True)
    ours = [check for check in every if check.__module__ == "craft_apps.checks"]
    assert [check.tags for check in ours] == [("craft_apps",)]
    assert set(ours) <= set(registry.get_checks(include_deployment_checks=False))
    with override_settings(CRAFT_APPS={"POLLING_ENABLED": "sometimes"}):
        with pytest.raises(SystemCheckError, match=r"craft_apps\.E001"):
            call_command("check", tags=["craft_apps"], stdout=StringIO(), stderr=StringIO())
        out = StringIO()
        call_command("check", tags=["models"], stdout=out)
        assert "no issues" in out.getvalue()


def test_e001_a_value_of_the_wrong_form_names_the_setting_and_its_variable():
    [message] = messages(POLLING_ENABLED="sometimes")
    assert message.id == "craft_apps.E001"
    assert "'sometimes'" in message.msg
    assert "CRAFT_APPS_RELEASE_POLLING_ENABLED" in message.hint
    assert ids(POLL_INTERVAL_SECS="often") == ["craft_apps.E001"]
    assert ids(GITHUB_API_URL="ftp://example.com") == ["craft_apps.E001"]


def test_e001_a_malformed_environment_variable_is_named(monkeypatch):
    monkeypatch.setenv("CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS", "4h")
    [message] = messages()
    assert message.id == "craft_apps.E001"
    assert "CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS is '4h'" in message.msg


def test_w001_malformed_app_entries_say_which_and_why():
    found = messages(APPS="photocraft=PhotoCraft=storytold/photocraft,junk,x=X=noslash")
    assert [m.id for m in found] == ["craft_apps.W001", "craft_apps.W001"]
    assert "'junk'" in found[0].msg and "three parts" in found[0].msg
    assert "'x=X=noslash'" in found[1].msg and "organization/project" in found[1].msg
    assert "key=Name=org/repo" in found[0].hint


def test_e002_no_valid_app_at_all():
    assert ids(APPS="junk") == ["craft_apps.W001", "craft_apps.E002"]


def test_w002_an_interval_below_the_minimum_is_raised_to_it():
    [message] = messages(POLL_INTERVAL_SECS=10)
    assert message.id == "craft_apps.W002"
    assert "using 300" in message.msg
    assert "CRAFT_APPS_RELEASE_GITHUB_TOKEN" in message.hint
    assert ids(POLL_INTERVAL_SECS=10, GITHUB_TOKEN="ghp_x") == ["craft_apps.W002"]
    assert ids(POLL_INTERVAL_SECS=60, GITHUB_TOKEN="ghp_x") == []


def test_w003_a_maximum_backoff_below_the_interval_is_raised_to_it():
    [message] = messages(MAX_BACKOFF_SECS=60)
    assert message.id == "craft_apps.W003"
    assert "1800" in message.msg


def test_w004_unknown_keys_are_named():
    [message] = messages(POLL_INTERVAL=600)
    assert message.id == "craft_apps.W004"
    assert "POLL_INTERVAL" in message.msg


def test_e005_craft_apps_must_be_a_dict():
    with override_settings(CRAFT_APPS=["POLL_INTERVAL_SECS"]):
        assert [m.id for m in check_settings()] == ["craft_apps.E005"]


def test_e004_a_state_directory_that_cannot_be_created(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    [message] = messages(STATE_DIR=str(blocker / "state"))
    assert message.id == "craft_apps.E004"
    assert str(blocker / "state") in message.msg
    assert "CRAFT_APPS_STATE_DIR" in message.hint


def test_e004_a_state_directory_that_cannot_be_written(tmp_path: Path):
    read_only = tmp_path / "ro"
    read_only.mkdir(mode=0o500)
    if os.geteuid() == 0:
        # root writes anywhere; a directory path through a file is unwritable for everyone.
        read_only = tmp_path / "ro-file"
        read_only.write_text("")
    assert ids(STATE_DIR=str(read_only)) == ["craft_apps.E004"]


def test_e003_a_redis_alias_that_is_not_django_redis():
    caches = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "craft_apps": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    with override_settings(CACHES=caches):
        assert ids() == ["craft_apps.E003"]


def test_w005_a_redis_alias_without_timeouts():
    alias = {**REDIS_ALIAS, "OPTIONS": {}}
    with override_settings(
        CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}, "craft_apps": alias}
    ):
        found = ids()
    assert found and set(found) == {"craft_apps.W005"}


def test_w006_a_redis_alias_sharing_its_url_with_another():
    other = {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_ALIAS["LOCATION"]}
    with override_settings(CACHES={"default": other, "craft_apps": REDIS_ALIAS}):
        assert ids() == ["craft_apps.W006"]


def test_a_well_configured_redis_alias_has_no_problems():
    default = {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": "redis://127.0.0.1:6399/0"}
    with override_settings(CACHES={"default": default, "craft_apps": REDIS_ALIAS}):
        assert ids() == []


def test_with_coordination_off_the_redis_alias_is_not_checked():
    caches = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "craft_apps": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    with override_settings(CACHES=caches):
        assert ids(COORDINATION_ENABLED=False) == []


def test_w007_the_api_url_moved_without_the_web_url_names_both():
    with override_settings(CRAFT_APPS={"GITHUB_API_URL": "https://ghe.example/api/v3"}):
        [message] = [m for m in check_settings() if m.id == "craft_apps.W007"]
    assert "GITHUB_API_URL" in message.msg and "https://ghe.example/api/v3" in message.msg
    assert "GITHUB_WEB_URL" in str(message.hint) and "every asset" in message.msg
    assert "craft_apps.W007" in ids(GITHUB_WEB_URL="https://ghe.example")
    both = {"GITHUB_API_URL": "https://ghe.example/api/v3", "GITHUB_WEB_URL": "https://ghe.example"}
    assert "craft_apps.W007" not in ids(**both)
    assert "craft_apps.W007" not in ids(GITHUB_API_URL="https://api.github.com/")
