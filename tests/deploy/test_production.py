"""The production settings: each value from the environment or a refusal to start, one line naming
the variable (never a secret's value); `check --deploy` clean with them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config import environment
from config.environment import DEMO_SECRET_KEY, PLACEHOLDER_SECRET_KEY
from tests.deploy.support import ROOT, containers, environment_of, outside_environment, strong_secret_key


def refusal(function: object, env: dict[str, str]) -> str:
    assert callable(function)
    with pytest.raises(ImproperlyConfigured) as raised:
        function(env)
    message = str(raised.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "value",
    ["", "   ", DEMO_SECRET_KEY, PLACEHOLDER_SECRET_KEY, "x" * 49],
    ids=["missing", "blank", "the demo's", "the examples' placeholder", "short"],
)
def test_the_secret_key_is_refused_when_missing_public_or_short(value: str):
    env = {"DJANGO_SECRET_KEY": value} if value else {}
    message = refusal(environment.secret_key, env)
    assert message.startswith("DJANGO_SECRET_KEY ")
    assert "secrets.token_urlsafe(50)" in message
    if value.strip():
        assert value not in message, "a key's value is never shown"


def test_a_strong_secret_key_is_taken():
    key = strong_secret_key()
    assert environment.secret_key({"DJANGO_SECRET_KEY": f" {key}\n"}) == key


def test_the_hosts_are_required_and_the_origins_checked():
    assert refusal(environment.allowed_hosts, {}).startswith("DJANGO_ALLOWED_HOSTS is not set")
    hosts = {"DJANGO_ALLOWED_HOSTS": " craft-apps.example.com, localhost ,"}
    assert environment.allowed_hosts(hosts) == ["craft-apps.example.com", "localhost"]
    assert environment.csrf_trusted_origins({}) == []
    origins = {"DJANGO_CSRF_TRUSTED_ORIGINS": "https://a.example.com,http://b.example.com:8080"}
    assert environment.csrf_trusted_origins(origins) == ["https://a.example.com", "http://b.example.com:8080"]
    message = refusal(environment.csrf_trusted_origins, {"DJANGO_CSRF_TRUSTED_ORIGINS": "a.example.com"})
    assert message.startswith("DJANGO_CSRF_TRUSTED_ORIGINS holds 'a.example.com'")


def test_the_database_is_postgresql_from_database_url():
    url = "postgresql://web:p%40ss%2Fword@db.internal:6432/craft?sslmode=require&connect_timeout=2"
    db = environment.database({"DATABASE_URL": url})
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "craft",
        "web",
        "p@ss/word",
        "db.internal",
        "6432",
    )
    assert db["OPTIONS"] == {"sslmode": "require", "connect_timeout": "2"}
    socket = environment.database({"DATABASE_URL": "postgres://web@%2Frun%2Fpostgresql/craft"})
    assert (socket["HOST"], socket["PORT"], socket["OPTIONS"]) == (
        "/run/postgresql",
        "",
        {"connect_timeout": "5"},
    )


@pytest.mark.parametrize(
    ("url", "start"),
    [
        ("", "DATABASE_URL is not set"),
        ("sqlite:////var/lib/site.sqlite3", "DATABASE_URL names sqlite scheme"),
        ("postgresql://web:secret@db:5432/", "DATABASE_URL names no database"),
        ("postgresql://web:secret@db:port/craft", "DATABASE_URL is not a URL"),
    ],
)
def test_a_database_url_that_cant_be_used_is_refused_without_its_password(url: str, start: str):
    message = refusal(environment.database, {"DATABASE_URL": url} if url else {})
    assert message.startswith(start)
    assert "secret" not in message


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=outside_environment() | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_the_manifest_as_shipped_refuses_to_start_naming_the_variable(tmp_path: Path):
    """The Secret's placeholder key: the migration Job and every container stop at start-up."""
    env = environment_of(containers()["web"])
    done = manage("check", **env | {"CRAFT_APPS_STATE_DIR": str(tmp_path)})
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "django.core.exceptions.ImproperlyConfigured: DJANGO_SECRET_KEY is the example's public "
        "value: make one with python -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )
    assert PLACEHOLDER_SECRET_KEY not in done.stderr


@pytest.mark.slow
def test_check_deploy_is_clean_with_the_production_settings(tmp_path: Path):
    """With the Secret filled in: every placeholder replaced by a value of its kind."""
    secret = {
        "DJANGO_SECRET_KEY": strong_secret_key(),
        "DATABASE_URL": f"postgresql://craft_apps:{strong_secret_key()}@postgres.example.internal/craft_apps",
        "CRAFT_APPS_REDIS_URL": "",
        "CRAFT_APPS_RELEASE_GITHUB_TOKEN": strong_secret_key(),
        "CRAFT_APPS_METRICS_TOKEN": strong_secret_key(),
    }
    env = environment_of(containers()["web"], secret)
    (tmp_path / "metrics").mkdir()  # the pod's volumes
    env |= {
        "CRAFT_APPS_STATE_DIR": str(tmp_path / "state"),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    done = manage("check", "--deploy", "--fail-level", "WARNING", **env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (2 silenced)." in done.stdout
