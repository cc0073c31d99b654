"""System checks (``manage.py check``): every configuration problem, with what to set.

This module owns every check id and message: ``conf``, ``fleet.connection``, ``api.metrics``
and ``signing`` report problems as data (a code and the values to name), and ``CHECKS`` below
says, per code, the id, the message and the hint: the one list of the ids (the settings page
of the docs shows them all).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from craft_apps.api.metrics import metrics_problems
from craft_apps.conf import (
    BY_KEY,
    DEFAULT_GITHUB_API_URL,
    DEFAULT_GITHUB_WEB_URL,
    Problem,
    app_settings,
    configured_value,
    describe,
)
from craft_apps.fleet.connection import alias_problems

TAG = "craft_apps"


@dataclass(frozen=True)
class Check:
    id: str
    msg: str  # a str.format template over the problem's details
    hint: str


@dataclass(frozen=True)
class Finding:
    """A problem as ``manage.py check`` and the poller report it."""

    id: str
    msg: str
    hint: str

    @property
    def is_error(self) -> bool:
        return ".E" in self.id


CHECKS: dict[str, Check] = {
    "invalid_value": Check(
        "craft_apps.E001",
        "{source} is {value!r}, which is not {expected}; using {default!r}.",
        "Set {setting} to {expected}.",
    ),
    "invalid_secret": Check(
        "craft_apps.E121",
        "{source} is a {type}, not {expected} (its value is not shown); the webhook is off.",
        "Set {setting} to the webhook's secret, several separated by commas while rotating.",
    ),
    "signing_key_malformed": Check(
        "craft_apps.E141",
        "{setting} is not a usable Ed25519 private key: {reason} (its value is not shown); it signs nothing.",
        "Set it to a key printed by 'python manage.py craft_apps_keys generate', "
        "or to an unencrypted PKCS#8 PEM of an Ed25519 key.",
    ),
    "signing_key_not_ed25519": Check(
        "craft_apps.E142",
        "{setting} is {reason} (its value is not shown); it signs nothing.",
        "Launchers verify Ed25519 only: make a key with 'python manage.py craft_apps_keys generate' "
        "(or 'openssl genpkey -algorithm ed25519').",
    ),
    "lease_timing": Check(
        "craft_apps.E001",
        "{ttl_setting} and {retry_setting}: {reason}; using the defaults.",
        "Make the TTL at least twice the retry (the defaults are 30 and 2).",
    ),
    "no_valid_app": Check(
        "craft_apps.E002",
        "{source} lists no valid app; serving the built-in list of {count} apps.",
        "Fix {apps_setting} or remove it to use the built-in list.",
    ),
    "not_django_redis": Check(
        "craft_apps.E003",
        "{where} has BACKEND {backend!r}, not django-redis; the poller can't coordinate through it.",
        "Set {where}['BACKEND'] to {expected!r}, or point CRAFT_APPS['REDIS_ALIAS'] at a django-redis alias.",
    ),
    "state_dir_unwritable": Check(
        "craft_apps.E004",
        "The state directory {path} can't be created or written: {reason}.",
        "Set {state_dir_setting} to a directory this user ({user}) can write.",
    ),
    "not_a_dict": Check(
        "craft_apps.E005",
        "settings.CRAFT_APPS is a {type}, not a dict; it is ignored.",
        "Set CRAFT_APPS to a dict such as {{'POLL_INTERVAL_SECS': 1800}}.",
    ),
    "app_skipped": Check(
        "craft_apps.W001",
        "{source}: skipped entry {reason}.",
        "Write each entry of {apps_setting} as key=Name=org/repo, separated by commas.",
    ),
    "below_minimum:POLL_INTERVAL_SECS": Check(
        "craft_apps.W002",
        "{setting} is {value}, below the minimum of {minimum} s {token_state}; using {minimum}.",
        "Set it to at least {minimum}{token_hint}",
    ),
    "below_minimum:MAX_BACKOFF_SECS": Check(
        "craft_apps.W003",
        "{setting} is {value}, below the polling interval; using the interval, {minimum}.",
        "Set it to at least the polling interval ({minimum}).",
    ),
    "below_minimum:SIGNING_VALIDITY_SECS": Check(
        "craft_apps.W141",
        "{setting} is {value}, shorter than the polling interval; using the interval, {minimum}.",
        "Set it to at least the polling interval ({minimum}); the default, 259200 (3 days), "
        "also outlasts a CDN's day of stale-if-error.",
    ),
    "above_maximum:SIGNING_VALIDITY_SECS": Check(
        "craft_apps.E143",
        "{setting} is {value}, longer than a year ({maximum} s); using the default, {default}.",
        "Set it to at most {maximum}; the default, 259200 (3 days), bounds how long a frozen feed "
        "is trusted.",
    ),
    "placeholder_secret": Check(
        "craft_apps.W008",
        "{where} still holds a placeholder ({placeholder}) where a secret belongs; its value is not shown.",
        "Set it to the real secret: the production example's files (an env file, a Kubernetes "
        "Secret) ship CHANGE-ME in each one to be replaced.",
    ),
    "unknown_keys": Check(
        "craft_apps.W004",
        "settings.CRAFT_APPS has unknown keys: {keys}; they are ignored.",
        "Check their spelling against the list of settings in the docs (docs/settings.md).",
    ),
    "redis_timeout": Check(
        "craft_apps.W005",
        "{where}['OPTIONS'][{option!r}] {state}; a Redis that stops answering could "
        "hold the poller longer than {limit} s for {what}.",
        "Set {where}['OPTIONS'][{option!r}] to {limit} (seconds) or less.",
    ),
    "redis_pool_size": Check(
        "craft_apps.W005",
        "{where}['OPTIONS']['CONNECTION_POOL_KWARGS']['max_connections'] {state}; "
        "the poller needs at most {limit} connections.",
        "Set {where}['OPTIONS']['CONNECTION_POOL_KWARGS'] to "
        "{{'max_connections': {limit}, 'health_check_interval': {health_check}}}.",
    ),
    "metrics_token_short": Check(
        "craft_apps.W131",
        "{metrics_setting} is only {length} characters long; anyone who guesses it reads the metrics.",
        "Use at least {minimum} random characters, e.g. from "
        "python -c 'import secrets; print(secrets.token_urlsafe(32))'.",
    ),
    "metrics_dir_unusable": Check(
        "craft_apps.W132",
        "PROMETHEUS_MULTIPROC_DIR is {path}, which {reason}; the endpoint's answers are not counted.",
        "Create it, writable by the web workers' user, and empty it when the web server starts.",
    ),
    "github_urls_apart": Check(
        "craft_apps.W007",
        "{changed} is {changed_value!r} but {default_setting} is still GitHub.com's {default_value!r}; "
        "the poller serves only links under {web_setting}, so every asset of every release would be dropped.",
        "Set {default_setting} to the same GitHub's address (for GitHub Enterprise Server, "
        "https://HOST/api/v3 and https://HOST).",
    ),
    "cdn_purge_incomplete": Check(
        "craft_apps.E151",
        "The CDN purge is {kind!r} but {missing} is not set; nothing is purged.",
        "Set it (docs/cdn.md, 'Purge on change'), or set {purge_kind_setting} to 'none'.",
    ),
    "cdn_purge_template": Check(
        "craft_apps.E152",
        "{purge_url_setting} is {value!r}, which has no '{{path}}'; nothing is purged.",
        "Write where each path goes, e.g. 'http://127.0.0.1:6081{{path}}' for a Varnish on this host.",
    ),
    "cdn_purge_backend": Check(
        "craft_apps.E153",
        "{purge_kind_setting} is {value!r}, which names no purge backend class ({reason}); "
        "nothing is purged.",
        "Use 'http', 'cloudflare' or the dotted path of a craft_apps.cdn.backends.base.PurgeBackend "
        "subclass (docs/cdn.md, 'Another CDN').",
    ),
    "private_app_unknown": Check(
        "craft_apps.W161",
        "{private_setting} names {keys}, which {apps_setting} does not list; ignored.",
        "Name only the keys of configured apps (docs/private.md).",
    ),
    "private_app_relative_links": Check(
        "craft_apps.W162",
        "{private_setting} names {keys}, but {public_url_setting} is not set; their download URLs "
        "are relative paths on this server until it is.",
        "Set it to the public base URL launchers use, e.g. 'https://updates.example.com' (docs/private.md).",
    ),
    "private_app_no_credentials": Check(
        "craft_apps.E161",
        "{private_setting} names {keys}, but neither {token_setting} nor a GitHub App "
        "({app_id_setting}) is set; GitHub answers 404 for a private repository without them.",
        "Set a fine-grained token with Contents: read on those repositories, or a GitHub App "
        "(docs/private.md).",
    ),
    "github_app_key_unusable": Check(
        "craft_apps.E162",
        "{setting} is not a usable GitHub App private key: {reason} (its value is not shown); "
        "the GitHub App is not used.",
        "Set it to the .pem GitHub made for the App (its text, or the file's path).",
    ),
    "github_app_incomplete": Check(
        "craft_apps.E163",
        "A GitHub App is half configured: {missing} is not set; the GitHub App is not used.",
        "Set both {app_id_setting} and {app_key_setting}, or neither.",
    ),
    "start_background_missing": Check(
        "craft_apps.W171",
        "MIDDLEWARE lacks {middleware!r}; each web worker starts its guarded rollouts' watch and "
        "notices read at its first request, not when it starts.",
        "Add it: MIDDLEWARE += [{middleware!r}] (docs/installation.md).",
    ),
    "redis_shared_url": Check(
        "craft_apps.W006",
        "{where}['LOCATION'] is also the LOCATION of {sharing}; "
        "django-redis keeps one pool per URL, so the poller would share that pool and its settings.",
        "Make {where}['LOCATION'] unique, e.g. add '?client_name={client_name}' "
        "or use another database number.",
    ),
}


def _check_for(problem: Problem) -> Check:
    key = problem.details.get("key")
    return CHECKS.get(f"{problem.code}:{key}") or CHECKS[problem.code]


def _context(problem: Problem) -> Mapping[str, Any]:
    """The problem's details plus the names every message may use."""
    details = dict(problem.details)
    key = details.get("key")
    if isinstance(key, str):
        details["setting"] = describe(key)
        details.setdefault("expected", BY_KEY[key].expected)
    has_token = app_settings.GITHUB_TOKEN is not None
    details["token_state"] = "with a GitHub token" if has_token else "without a GitHub token"
    details["token_hint"] = "." if has_token else f", or set {BY_KEY['GITHUB_TOKEN'].env} for a 60 s minimum."
    details["apps_setting"] = describe("APPS")
    details["state_dir_setting"] = describe("STATE_DIR")
    details["ttl_setting"] = describe("LEASE_TTL_SECS")
    details["retry_setting"] = describe("LEASE_RETRY_SECS")
    details["metrics_setting"] = describe("METRICS_TOKEN")
    details["purge_kind_setting"] = describe("CDN_PURGE_KIND")
    details["purge_url_setting"] = describe("CDN_PURGE_URL")
    details["private_setting"] = describe("PRIVATE_APPS")
    details["token_setting"] = describe("GITHUB_TOKEN")
    details["app_id_setting"] = describe("GITHUB_APP_ID")
    details["app_key_setting"] = describe("GITHUB_APP_PRIVATE_KEY")
    details["public_url_setting"] = describe("CDN_PUBLIC_URL")
    return details


def finding(problem: Problem) -> Finding:
    """The id, message and hint of one problem."""
    check = _check_for(problem)
    context = _context(problem)
    return Finding(check.id, check.msg.format(**context), check.hint.format(**context))


# Its own tag (``check --tag craft_apps``); these are not deploy-only: each one matters on a
# developer's machine as much as on a host.
@register(TAG)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [_message(found) for found in configuration_problems()]


# Deploy-only: a placeholder is what a developer's machine may well hold, a host must not.
@register(TAG, deploy=True)
def check_placeholder_secrets(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [_message(finding(problem)) for problem in placeholder_problems()]


START_BACKGROUND = "craft_apps.api.startup.StartBackground"


@register(TAG)
def check_background_start(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Warn when MIDDLEWARE can't start each web worker's background tasks when it starts."""
    if START_BACKGROUND in getattr(settings, "MIDDLEWARE", ()):
        return []
    return [_message(finding(Problem("start_background_missing", {"middleware": START_BACKGROUND})))]


PLACEHOLDER = re.compile(r"change[-_ ]?me", re.IGNORECASE)
SECRET_SETTINGS = (
    "GITHUB_TOKEN",
    "GITHUB_WEBHOOK_SECRET",
    "METRICS_TOKEN",
    "SIGNING_KEY",
    "SIGNING_KEY_PREVIOUS",
    "CDN_PURGE_TOKEN",
    "GITHUB_APP_PRIVATE_KEY",
)


def placeholder_problems() -> list[Problem]:
    """The secrets craft_apps reads that still hold the examples' ``CHANGE-ME``: its settings,
    the password of its Redis alias's URL and of each database. Never the value itself."""
    found: list[tuple[str, object]] = []
    for key in SECRET_SETTINGS:
        raw = configured_value(key)
        if raw is not None:
            found.append((describe(key), raw[0]))
    caches = getattr(settings, "CACHES", None) or {}
    alias = caches.get(app_settings.REDIS_ALIAS) if isinstance(caches, dict) else None
    if isinstance(alias, dict):
        locations = alias.get("LOCATION")
        for location in locations if isinstance(locations, list | tuple) else [locations]:
            where = f"The password in CACHES[{app_settings.REDIS_ALIAS!r}]['LOCATION']"
            found.append((where, _password(location)))
    databases = getattr(settings, "DATABASES", None) or {}
    for name, database in databases.items() if isinstance(databases, dict) else ():
        if isinstance(database, dict):
            found.append((f"DATABASES[{name!r}]['PASSWORD']", database.get("PASSWORD")))
    return [
        Problem("placeholder_secret", {"where": where, "placeholder": "CHANGE-ME"})
        for where, value in found
        if _holds_placeholder(value)
    ]


def _password(location: object) -> str | None:
    if not isinstance(location, str):
        return None
    try:
        password = urlsplit(location).password
    except ValueError:
        return None
    return None if password is None else unquote(password)


def _holds_placeholder(value: object) -> bool:
    texts = value if isinstance(value, list | tuple) else [value]
    return any(isinstance(text, str) and PLACEHOLDER.search(text) is not None for text in texts)


def configuration_problems() -> list[Finding]:
    """Every problem with the configuration, errors and warnings, in a stable order."""
    configured = getattr(settings, "CRAFT_APPS", None)
    if configured is not None and not isinstance(configured, dict):
        return [finding(Problem("not_a_dict", {"type": type(configured).__name__}))]
    problems = app_settings.problems()
    problems.extend(_state_dir_problems(app_settings.STATE_DIR))
    if app_settings.COORDINATION_ENABLED:
        problems.extend(alias_problems(app_settings.REDIS_ALIAS))
    problems.extend(metrics_problems())
    problems.extend(_github_url_problems(app_settings.GITHUB_API_URL, app_settings.GITHUB_WEB_URL))
    problems.extend(_private_app_problems())
    return [finding(problem) for problem in problems]


def _private_app_problems() -> list[Problem]:
    """A private app with no credentials to read it (every request for it would be a 404), or
    whose links are relative paths (no ``CDN_PUBLIC_URL``)."""
    private = [app.key for app in app_settings.APPS if app.private]
    if not private:
        return []
    keys = {"keys": ", ".join(private)}
    found = [] if app_settings.CDN_PUBLIC_URL is not None else [Problem("private_app_relative_links", keys)]
    if app_settings.GITHUB_TOKEN is None and app_settings.GITHUB_APP is None:
        found.insert(0, Problem("private_app_no_credentials", keys))
    return found


def _github_url_problems(api_url: str, web_url: str) -> list[Problem]:
    """One of the two URLs moved to another GitHub and the other left at github.com's."""
    api_default = api_url.rstrip("/") == DEFAULT_GITHUB_API_URL
    web_default = web_url.rstrip("/") == DEFAULT_GITHUB_WEB_URL
    if api_default == web_default:
        return []
    changed, default = (
        ("GITHUB_WEB_URL", "GITHUB_API_URL") if api_default else ("GITHUB_API_URL", "GITHUB_WEB_URL")
    )
    details = {
        "changed": describe(changed),
        "changed_value": web_url if api_default else api_url,
        "default_setting": describe(default),
        "default_value": api_url if api_default else web_url,
        "web_setting": describe("GITHUB_WEB_URL"),
    }
    return [Problem("github_urls_apart", details)]


def _state_dir_problems(state_dir: Path) -> list[Problem]:
    """The directory must exist (or be creatable) and be writable by this user."""
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=state_dir, prefix=".check-", delete=True):
            pass
    except OSError as err:
        reason = err.strerror or type(err).__name__
        return [Problem("state_dir_unwritable", {"path": state_dir, "reason": reason, "user": _user()})]
    return []


def _user() -> str:
    try:
        return os.getlogin()
    except OSError:
        return f"uid {os.getuid()}"


def _message(found: Finding) -> CheckMessage:
    kind = Error if found.is_error else Warning
    return kind(found.msg, hint=found.hint, id=found.id)
