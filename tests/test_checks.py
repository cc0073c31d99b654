"""Every system check id, with its message and hint."""

from __future__ import annotations

import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.checks import ERROR, WARNING
from django.core.checks.registry import registry
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from craft_apps.checks import check_background_start, check_settings

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


@pytest.mark.django_db  # the model checks ask SQLite whether it has JSON fields
def test_demo_site_check_is_clean():
    out = StringIO()
    call_command("check", stdout=out)
    assert "no issues" in out.getvalue()


@pytest.mark.django_db  # the model checks ask SQLite whether it has JSON fields
def test_the_checks_have_their_own_tag_and_only_the_placeholder_one_is_deploy_only():
    every = registry.get_checks(include_deployment_checks=True)
    ours = [check for check in every if check.__module__ == "craft_apps.checks"]
    assert [check.tags for check in ours] == [("craft_apps",)] * 3
    always = set(registry.get_checks(include_deployment_checks=False))
    from craft_apps.checks import check_placeholder_secrets

    assert [check for check in ours if check not in always] == [check_placeholder_secrets]
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


@pytest.mark.parametrize("value", [99_999_999_999_999, "99999999999999", 365 * 86_400 + 1])
def test_e143_a_signing_window_longer_than_a_year_names_the_setting(value):
    [message] = messages(SIGNING_VALIDITY_SECS=value)
    assert message.id == "craft_apps.E143" and message.level == ERROR
    assert (
        "CRAFT_APPS['SIGNING_VALIDITY_SECS']" in message.msg
        and "CRAFT_APPS_SIGNING_VALIDITY_SECS" in message.msg
    )
    assert "using the default, 259200" in message.msg
    assert ids(SIGNING_VALIDITY_SECS=365 * 86_400) == []


PLACEHOLDERS: dict[str, object] = {
    "GITHUB_TOKEN": "CHANGE-ME",
    "GITHUB_WEBHOOK_SECRET": ["real-secret-0123456789", "change-me-too"],
    "METRICS_TOKEN": "CHANGE-ME-16-or-more-characters",
    "SIGNING_KEY": "CHANGE-ME",
    "SIGNING_KEY_PREVIOUS": "changeme",
}


def deploy_messages() -> list[str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("check", deploy=True, tags=["craft_apps"], stdout=out, stderr=err)
    except SystemCheckError as error:
        return [str(error)]
    return [out.getvalue() + err.getvalue()]


def test_w008_check_deploy_names_each_placeholder_secret_never_its_value(monkeypatch):
    """The production example's CHANGE-ME in every secret craft_apps reads: one warning each,
    under ``check --deploy`` only, naming where and never the value."""
    from django.conf import settings

    caches: dict[str, dict[str, object]] = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    }
    caches["craft_apps"] = {**REDIS_ALIAS, "LOCATION": "redis://:CHANGE-ME@redis.example.internal:6379/0"}
    monkeypatch.setitem(settings.DATABASES["default"], "PASSWORD", "CHANGE-ME")
    with override_settings(
        CRAFT_APPS={**PLACEHOLDERS, "SIGNING_KEY": "", "SIGNING_KEY_PREVIOUS": ""}, CACHES=caches
    ):
        from craft_apps.checks import check_placeholder_secrets

        assert [m.id for m in check_settings()].count("craft_apps.W008") == 0, "not outside --deploy"
        found = check_placeholder_secrets()
    assert {m.id for m in found} == {"craft_apps.W008"} and all(m.level == WARNING for m in found)
    text = "\n".join(m.msg for m in found)
    for where in (
        "GITHUB_TOKEN",
        "GITHUB_WEBHOOK_SECRET",
        "METRICS_TOKEN",
        "['LOCATION']",
        "DATABASES['default']",
    ):
        assert where in text, where
    assert len(found) == 5
    for value in ("change-me-too", "CHANGE-ME-16", "redis.example.internal"):
        assert value not in text


def test_w008_through_manage_py_check_deploy_and_the_signing_keys(monkeypatch):
    for key, value in PLACEHOLDERS.items():
        monkeypatch.setenv(f"CRAFT_APPS_{'RELEASE_' if key.startswith('GITHUB') else ''}{key}", str(value))
    monkeypatch.setenv("CRAFT_APPS_RELEASE_GITHUB_WEBHOOK_SECRET", "real-secret-0123456789,change-me-too")
    [report] = deploy_messages()
    for key in PLACEHOLDERS:
        assert f"CRAFT_APPS[{key!r}]" in report and "craft_apps.W008" in report, key
    assert "change-me-too" not in report
    for name in list(os.environ):
        if name.startswith("CRAFT_APPS_") and name != "CRAFT_APPS_STATE_DIR":
            monkeypatch.delenv(name)
    with override_settings(CRAFT_APPS={"GITHUB_TOKEN": "ghp_a-real-looking-token"}):
        from craft_apps.checks import check_placeholder_secrets

        assert check_placeholder_secrets() == []


@pytest.mark.slow
def test_w008_check_deploy_on_the_production_example_as_shipped(tmp_path: Path):
    """``manage.py check --deploy`` with this repository's production settings and the systemd
    example's env file, only its Django secret key made real (the settings refuse the
    placeholder): a warning for each CHANGE-ME craft_apps reads, none showing a value."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    [example] = [p for p in root.glob("*/**/craft-apps.env.example") if ".nox" not in p.parts]
    env = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    for line in example.read_text(encoding="utf-8").splitlines():
        name, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            env[name.strip()] = value.strip()
    env.update(
        DJANGO_SECRET_KEY="x" * 60,
        DJANGO_SETTINGS_MODULE="config.production",
        CRAFT_APPS_STATE_DIR=str(tmp_path / "state"),
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=root, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    found = [line for line in report.splitlines() if "craft_apps.W008" in line]
    wheres = (
        "RELEASE_GITHUB_TOKEN",
        "CRAFT_APPS_METRICS_TOKEN",
        "DATABASES['default']['PASSWORD']",
        "LOCATION",
    )
    assert len(found) == 4 and all(any(where in line for line in found) for where in wheres), report
    assert "CHANGE-ME-16" not in report


def test_w171_a_site_without_the_start_middleware_is_warned(settings):
    assert check_background_start() == []  # the demo site lists it
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if not m.endswith("StartBackground")]
    [message] = check_background_start()
    assert message.id == "craft_apps.W171" and message.level == WARNING
    assert "craft_apps.api.startup.StartBackground" in f"{message.msg} {message.hint}"
