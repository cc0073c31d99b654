"""Settings: CRAFT_APPS dict > environment variable > default, read at call time."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

from craft_apps.conf import DEFAULT_APPS, app_settings, non_blank_token, parse_app_list
from craft_apps.kernel.domain import AppSpec


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in list(__import__("os").environ):
        if name.startswith("CRAFT_APPS_"):
            monkeypatch.delenv(name)


class TestPrecedence:
    def test_the_dict_wins_over_the_environment(self, monkeypatch):
        monkeypatch.setenv("CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS", "900")
        with override_settings(CRAFT_APPS={"POLL_INTERVAL_SECS": 600}):
            assert app_settings.POLL_INTERVAL_SECS == 600

    def test_the_environment_wins_over_the_default(self, monkeypatch):
        monkeypatch.setenv("CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS", "900")
        with override_settings(CRAFT_APPS={}):
            assert app_settings.POLL_INTERVAL_SECS == 900

    def test_the_default_applies_when_neither_is_set(self):
        with override_settings(CRAFT_APPS={}):
            assert app_settings.POLL_INTERVAL_SECS == 1800
            assert app_settings.POLLING_ENABLED is True
            assert app_settings.COORDINATION_ENABLED is True
            assert app_settings.MAX_BACKOFF_SECS == 14_400
            assert app_settings.GITHUB_TOKEN is None
            assert app_settings.APPS == DEFAULT_APPS
            assert app_settings.GITHUB_API_URL == "https://api.github.com"
            assert app_settings.GITHUB_WEB_URL == "https://github.com"
            assert app_settings.REDIS_ALIAS == "craft_apps"
            assert app_settings.REDIS_KEY_PREFIX == "craftApps:releases:"

    def test_settings_are_read_at_call_time(self):
        with override_settings(CRAFT_APPS={"POLLING_ENABLED": False}):
            assert app_settings.POLLING_ENABLED is False
        with override_settings(CRAFT_APPS={"POLLING_ENABLED": True}):
            assert app_settings.POLLING_ENABLED is True

    @pytest.mark.parametrize(
        ("key", "env", "raw", "expected"),
        [
            ("POLLING_ENABLED", "CRAFT_APPS_RELEASE_POLLING_ENABLED", "false", False),
            ("COORDINATION_ENABLED", "CRAFT_APPS_RELEASE_COORDINATION_ENABLED", "0", False),
            ("MAX_BACKOFF_SECS", "CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS", "7200", 7200),
            ("GITHUB_TOKEN", "CRAFT_APPS_RELEASE_GITHUB_TOKEN", " ghp_x ", "ghp_x"),
            (
                "GITHUB_API_URL",
                "CRAFT_APPS_RELEASE_GITHUB_API_URL",
                "http://127.0.0.1:8765/",
                "http://127.0.0.1:8765",
            ),
            (
                "GITHUB_WEB_URL",
                "CRAFT_APPS_RELEASE_GITHUB_WEB_URL",
                "https://ghe.example.com",
                "https://ghe.example.com",
            ),
            ("STATE_DIR", "CRAFT_APPS_STATE_DIR", "/srv/craft", Path("/srv/craft")),
            ("REDIS_ALIAS", "CRAFT_APPS_REDIS_ALIAS", "fleet", "fleet"),
            ("REDIS_KEY_PREFIX", "CRAFT_APPS_RELEASE_REDIS_KEY_PREFIX", "staging:craft:", "staging:craft:"),
        ],
    )
    def test_every_setting_reads_its_environment_variable(self, monkeypatch, key, env, raw, expected):
        monkeypatch.setenv(env, raw)
        with override_settings(CRAFT_APPS={}):
            assert getattr(app_settings, key) == expected


class TestInterval:
    def test_with_a_token_the_default_is_two_minutes_and_the_minimum_one(self):
        with override_settings(CRAFT_APPS={"GITHUB_TOKEN": "ghp_x"}):
            assert app_settings.POLL_INTERVAL_SECS == 120
        with override_settings(CRAFT_APPS={"GITHUB_TOKEN": "ghp_x", "POLL_INTERVAL_SECS": 10}):
            assert app_settings.POLL_INTERVAL_SECS == 60
        with override_settings(CRAFT_APPS={"GITHUB_TOKEN": "ghp_x", "POLL_INTERVAL_SECS": 90}):
            assert app_settings.POLL_INTERVAL_SECS == 90

    def test_without_a_token_the_default_is_thirty_minutes_and_the_minimum_five(self):
        for token in (None, "", "   \n"):
            with override_settings(CRAFT_APPS={"GITHUB_TOKEN": token, "POLL_INTERVAL_SECS": 90}):
                assert app_settings.POLL_INTERVAL_SECS == 300
        with override_settings(CRAFT_APPS={"POLL_INTERVAL_SECS": 3600}):
            assert app_settings.POLL_INTERVAL_SECS == 3600

    def test_the_maximum_backoff_is_never_below_the_interval(self):
        with override_settings(CRAFT_APPS={"POLL_INTERVAL_SECS": 3600, "MAX_BACKOFF_SECS": 60}):
            assert app_settings.MAX_BACKOFF_SECS == 3600

    def test_a_malformed_number_falls_back_to_the_default(self):
        with override_settings(CRAFT_APPS={"POLL_INTERVAL_SECS": "often"}):
            assert app_settings.POLL_INTERVAL_SECS == 1800


def test_a_missing_empty_or_blank_token_is_no_token():
    assert non_blank_token(None) is None
    assert non_blank_token("") is None
    assert non_blank_token("  \n") is None
    assert non_blank_token(" ghp_x ") == "ghp_x"


class TestAppList:
    def test_reads_an_app_list_and_skips_bad_entries(self):
        apps, skipped = parse_app_list(
            " PhotoCraft=PhotoCraft=storytold/photocraft, junk, x=X=noslash, k=K=org/repo "
        )
        assert apps == [
            AppSpec("photocraft", "PhotoCraft", "storytold/photocraft"),
            AppSpec("k", "K", "org/repo"),
        ]
        assert len(skipped) == 2
        assert "'junk'" in skipped[0] and "three parts" in skipped[0]
        assert "organization/project" in skipped[1]

    def test_a_name_may_contain_an_equals_sign_and_keys_may_contain_dashes(self):
        apps, skipped = parse_app_list("artcraft-launcher=ArtCraft Launcher=storytold/craft-launcher")
        assert apps == [AppSpec("artcraft-launcher", "ArtCraft Launcher", "storytold/craft-launcher")]
        assert skipped == []

    def test_duplicate_keys_keep_the_first(self):
        apps, skipped = parse_app_list("a=A=o/a,A=Other=o/b")
        assert apps == [AppSpec("a", "A", "o/a")]
        assert "listed twice" in skipped[0]

    def test_a_list_of_tuples_is_accepted_in_the_dict(self):
        with override_settings(CRAFT_APPS={"APPS": [("Solo", "Solo", "org/solo")]}):
            assert (AppSpec("solo", "Solo", "org/solo"),) == app_settings.APPS

    def test_an_app_list_with_nothing_valid_falls_back_to_the_built_in_list(self):
        with override_settings(CRAFT_APPS={"APPS": "junk,,x=y"}):
            assert app_settings.APPS == DEFAULT_APPS

    def test_the_default_list_has_the_suite_and_the_launcher(self):
        assert len(DEFAULT_APPS) == 13
        assert AppSpec("artcraft-launcher", "ArtCraft Launcher", "storytold/craft-launcher") in DEFAULT_APPS


def test_the_default_state_dir_is_under_the_sites_base_dir(settings):
    settings.CRAFT_APPS = {}
    assert Path(settings.BASE_DIR) / "var" / "craft_apps" == app_settings.STATE_DIR


def test_every_environment_variable_is_named_once_in_the_package():
    from craft_apps.conf import SETTINGS

    package = Path(__file__).resolve().parents[1] / "craft_apps"
    sources = {p: p.read_text(encoding="utf-8") for p in package.rglob("*.py")}
    for setting in SETTINGS:
        holders = [p.name for p, text in sources.items() if setting.env in text]
        assert holders == ["conf.py"], f"{setting.env} is written in {holders}"
        assert sources[package / "conf.py"].count(f'"{setting.env}"') == 1
