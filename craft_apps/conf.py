"""The app's settings, read at call time so ``override_settings`` and the environment both work.

Each setting comes from ``settings.CRAFT_APPS[KEY]``, else from its environment variable, else
from its default. ``SETTINGS`` declares every one (key, variable, parser, default, minimum);
``resolve`` reads any of them and reports what was wrong as data; ``app_settings``' attributes
return the value, and ``checks`` turns the problems into messages. So a malformed value never
crashes anything: it is replaced by the default (or raised to its minimum) and named by a check.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from django.conf import settings
from django.utils.module_loading import import_string

from craft_apps.kernel.domain import AppSpec, LeaseTiming
from craft_apps.kernel.signing import (
    DEFAULT_VALIDITY_SECS,
    MAX_VALIDITY_SECS,
    SigningConfig,
    SigningKey,
    UnusableKey,
    parse_private_key,
)

T = TypeVar("T")

DEFAULT_INTERVAL_SECS_WITH_TOKEN = 120
MIN_INTERVAL_SECS_WITH_TOKEN = 60
DEFAULT_INTERVAL_SECS_WITHOUT_TOKEN = 1800
MIN_INTERVAL_SECS_WITHOUT_TOKEN = 300
DEFAULT_MAX_BACKOFF_SECS = 14_400
DEFAULT_GITHUB_API_URL = "https://api.github.com"
DEFAULT_GITHUB_WEB_URL = "https://github.com"
DEFAULT_REDIS_ALIAS = "craft_apps"
DEFAULT_REDIS_KEY_PREFIX = "craftApps:releases:"
DEFAULT_LEASE_TTL_SECS = 30.0
DEFAULT_LEASE_RETRY_SECS = 2.0
DEFAULT_CLOUDFLARE_API_URL = "https://api.cloudflare.com/client/v4"
DEFAULT_CDN_PURGE_TIMEOUT_SECS = 5.0
# The purge backends by name (docs/cdn.md); ``CDN_PURGE_KIND`` may also be a class's dotted path.
PURGE_BACKENDS = {
    "http": "craft_apps.cdn.backends.http.HttpPurge",
    "cloudflare": "craft_apps.cdn.backends.cloudflare.CloudflarePurge",
}
CDN_PURGE_METHODS = ("PURGE", "BAN")

DEFAULT_APPS: tuple[AppSpec, ...] = (
    AppSpec("photocraft", "PhotoCraft", "storytold/photocraft"),
    AppSpec("vectorcraft", "VectorCraft", "storytold/vectorcraft"),
    AppSpec("filmcraft", "FilmCraft", "storytold/filmcraft"),
    AppSpec("lightcraft", "LightCraft", "storytold/lightcraft"),
    AppSpec("pdfcraft", "PdfCraft", "storytold/pdfcraft"),
    AppSpec("effectcraft", "EffectCraft", "storytold/effectcraft"),
    AppSpec("designcraft", "DesignCraft", "storytold/designcraft"),
    AppSpec("wordcraft", "WordCraft", "storytold/wordcraft"),
    AppSpec("deckcraft", "DeckCraft", "storytold/deckcraft"),
    AppSpec("gridcraft", "GridCraft", "storytold/gridcraft"),
    AppSpec("cadcraft", "CADCraft", "storytold/cadcraft"),
    AppSpec("soundcraft", "SoundCraft", "storytold/soundcraft"),
    AppSpec("artcraft-launcher", "ArtCraft Launcher", "storytold/craft-launcher"),
)

GITHUB_APP_KEY_UNUSABLE = "github_app_key_unusable"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Problem:
    """Something wrong with the configuration, as data. ``checks`` owns every check id and
    message: ``code`` names the kind of problem, ``details`` the values its message names."""

    code: str
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Resolved(Generic[T]):
    value: T
    problems: list[Problem] = field(default_factory=list)


def _parse_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError(value)


def _parse_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(value)
    return int(value.strip()) if isinstance(value, str) else value


def _parse_positive_seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(value)
    seconds = float(value.strip()) if isinstance(value, str) else float(value)
    if not seconds > 0:
        raise ValueError(value)
    return seconds


def _parse_text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value.strip()


def _parse_text_or_default(value: object) -> str | None:
    """Text; blank counts as unset (the default)."""
    return _parse_text(value) or None


def _parse_path(value: object) -> Path | None:
    text = _parse_text(value)
    return Path(text).expanduser() if text else None


def _parse_url(value: object) -> str:
    url = _parse_text(value).rstrip("/")
    if not url.startswith(("http://", "https://")) or not url.split("//", 1)[1]:
        raise ValueError(value)
    return url


def non_blank_token(value: object) -> str | None:
    """The token, trimmed; None when unset, empty, blank or not a string. Never raises, so the
    token can never end up in a message."""
    if not isinstance(value, str):
        return None
    token = value.strip()
    return token or None


def parse_secret_list(value: object) -> tuple[str, ...] | None:
    """Webhook secrets: one string of comma-separated secrets, or (in the dict) a list of strings;
    each trimmed, blank ones dropped, none left meaning unset. Raises ``TypeError`` with only the
    type's name, so a secret never reaches a message."""
    if isinstance(value, str):
        parts: list[object] = list(value.split(","))
    elif isinstance(value, list | tuple):
        parts = list(value)
    else:
        raise TypeError(type(value).__name__)
    if not all(isinstance(part, str) for part in parts):
        raise TypeError("a list holding something other than strings")
    secrets = tuple(part.strip() for part in parts if isinstance(part, str) and part.strip())
    return secrets or None


def _parse_choice(choices: tuple[str, ...], fold: Callable[[str], str]) -> Callable[[object], str]:
    """A parser for one of ``choices`` (compared after ``fold``); blank means the default."""

    def parse(value: object) -> str:
        text = fold(_parse_text(value))
        if text and text not in choices:
            raise ValueError(value)
        return text or choices[0]

    return parse


def _parse_purge_kind(value: object) -> str:
    """``none``, a name of ``PURGE_BACKENDS`` (any case) or a dotted path; blank means none."""
    text = _parse_text(value)
    if "." in text and all(part.isidentifier() for part in text.split(".")):
        return text
    if text.lower() in ("", "none", *PURGE_BACKENDS):
        return text.lower() or "none"
    raise ValueError(value)


def _parse_purge_url(value: object) -> str | None:
    """An http(s) URL, kept as written but for trailing slashes; blank means none."""
    text = _parse_text(value)
    return _parse_url(text) if text else None


def _parse_signing_key(value: object) -> SigningKey | None:
    """An Ed25519 private key (``signing.parse_private_key``); blank means none."""
    if isinstance(value, str) and not value.strip():
        return None
    return parse_private_key(value)


@dataclass(frozen=True)
class GitHubAppKey:
    """A GitHub App's RSA private key, read from a PEM or a file holding one; ``fingerprint``
    tells two keys apart without showing either (the repr shows only it)."""

    key: Any = field(repr=False)
    fingerprint: str


def _parse_github_app_key(value: object) -> GitHubAppKey | None:
    """A PEM, or the path of a file holding one; blank means none. Raises ``UnusableKey``
    (``github_app_key_unusable``) naming what is wrong, never the key."""
    import hashlib

    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    if not isinstance(value, str):
        raise UnusableKey(GITHUB_APP_KEY_UNUSABLE, f"a {type(value).__name__}, not a PEM or a path")
    text = value.strip()
    if not text:
        return None
    if "-----BEGIN" not in text:
        try:
            text = Path(text).expanduser().read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as err:
            reason = getattr(err, "strerror", None) or type(err).__name__
            message = f"the file it names can't be read ({reason})"
            raise UnusableKey(GITHUB_APP_KEY_UNUSABLE, message) from None
    try:
        key = load_pem_private_key(text.encode("ascii", errors="replace"), password=None)
    except (ValueError, TypeError):
        raise UnusableKey(GITHUB_APP_KEY_UNUSABLE, "not an unencrypted PEM private key") from None
    if not isinstance(key, RSAPrivateKey):
        raise UnusableKey(GITHUB_APP_KEY_UNUSABLE, "not an RSA key (GitHub Apps sign with RSA)")
    return GitHubAppKey(key, hashlib.sha256(text.encode()).hexdigest()[:16])


def _parse_positive_id(value: object) -> int:
    number = _parse_int(value)
    if number <= 0:
        raise ValueError(value)
    return number


def _parse_apps(value: object) -> object:
    return value  # read by parse_app_list, which reports each entry's problem itself


def _parse_app_keys(value: object) -> tuple[str, ...]:
    """App keys: one comma-separated string or a list of strings; lowercased, blanks dropped."""
    if isinstance(value, str):
        parts: list[object] = list(value.split(","))
    elif isinstance(value, list | tuple):
        parts = list(value)
    else:
        raise TypeError(value)
    if not all(isinstance(part, str) for part in parts):
        raise TypeError(value)
    return tuple(dict.fromkeys(str(part).strip().lower() for part in parts if str(part).strip()))


@dataclass(frozen=True)
class Setting:
    """One setting: where it is read, how it is parsed, and how the docs document it.

    ``parse`` raises ``TypeError``/``ValueError`` for a malformed value, which then counts as
    unset (its default) and is reported with ``expected``. A ``minimum`` raises a smaller
    value to it (a warning); both may depend on other settings, so they are callables. A value
    above ``maximum`` is an error, and the default is used.
    """

    key: str
    env: str
    type_doc: str
    default_doc: str
    parse: Callable[[object], Any]
    expected: str
    default: Callable[[], Any]
    minimum: Callable[[], int] | None = None
    secret: bool = False  # a malformed value is reported by its type only, never its text
    maximum: int | None = None  # a larger value is an error: the default is used


def _interval_default() -> int:
    if app_settings.GITHUB_TOKEN is not None or app_settings.GITHUB_APP is not None:
        return DEFAULT_INTERVAL_SECS_WITH_TOKEN
    return DEFAULT_INTERVAL_SECS_WITHOUT_TOKEN


def _interval_minimum() -> int:
    if app_settings.GITHUB_TOKEN is not None or app_settings.GITHUB_APP is not None:
        return MIN_INTERVAL_SECS_WITH_TOKEN
    return MIN_INTERVAL_SECS_WITHOUT_TOKEN


def _poll_interval() -> int:
    return app_settings.POLL_INTERVAL_SECS


def _const(value: Any) -> Callable[[], Any]:
    return lambda: value


# Every setting, in the docs' order: docs/settings.md's table is generated from it (docs/conf.py).
SETTINGS: tuple[Setting, ...] = (
    Setting(
        "POLLING_ENABLED",
        "CRAFT_APPS_RELEASE_POLLING_ENABLED",
        "bool",
        "`True`",
        _parse_bool,
        "true or false",
        _const(True),
    ),
    Setting(
        "COORDINATION_ENABLED",
        "CRAFT_APPS_RELEASE_COORDINATION_ENABLED",
        "bool",
        "`True`",
        _parse_bool,
        "true or false",
        _const(True),
    ),
    Setting(
        "POLL_INTERVAL_SECS",
        "CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS",
        "int",
        "`120` with a token, `1800` without; at least `60` / `300`",
        _parse_int,
        "a whole number of seconds",
        _interval_default,
        _interval_minimum,
    ),
    Setting(
        "MAX_BACKOFF_SECS",
        "CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS",
        "int",
        "`14400` (4 h), never below the interval",
        _parse_int,
        "a whole number of seconds",
        _const(DEFAULT_MAX_BACKOFF_SECS),
        lambda: _poll_interval(),
    ),
    Setting(
        "GITHUB_TOKEN",
        "CRAFT_APPS_RELEASE_GITHUB_TOKEN",
        "str",
        "none (unset, empty or blank means none)",
        non_blank_token,
        "a string",
        _const(None),
    ),
    Setting(
        "APPS",
        "CRAFT_APPS_RELEASE_APPS",
        "str `key=Name=org/repo,…` (or a list of such strings or 3-tuples)",
        "the 13 built-in apps",
        _parse_apps,
        "a string like 'key=Name=org/repo,...'",
        _const(DEFAULT_APPS),
    ),
    Setting(
        "PRIVATE_APPS",
        "CRAFT_APPS_RELEASE_PRIVATE_APPS",
        "str: comma-separated app keys (or a list of str)",
        "none: every app is public ([private repositories](private.md))",
        _parse_app_keys,
        "a string like 'key,key'",
        _const(()),
    ),
    Setting(
        "GITHUB_APP_ID",
        "CRAFT_APPS_RELEASE_GITHUB_APP_ID",
        "str: a GitHub App's id (or its client id)",
        "none: no App; with its key, used instead of `GITHUB_TOKEN` ([private repositories](private.md))",
        _parse_text_or_default,
        "a string",
        _const(None),
    ),
    Setting(
        "GITHUB_APP_PRIVATE_KEY",
        "CRAFT_APPS_RELEASE_GITHUB_APP_PRIVATE_KEY",
        "str: the App's private key, PEM, or the path of its `.pem` file",
        "none (never logged, never written, never sent)",
        _parse_github_app_key,
        "a PEM private key or a file path",
        _const(None),
        secret=True,
    ),
    Setting(
        "GITHUB_APP_INSTALLATION_ID",
        "CRAFT_APPS_RELEASE_GITHUB_APP_INSTALLATION_ID",
        "int",
        "none: found per repository (`GET /repos/{owner}/{repo}/installation`)",
        _parse_positive_id,
        "a positive whole number",
        _const(None),
    ),
    Setting(
        "GITHUB_API_URL",
        "CRAFT_APPS_RELEASE_GITHUB_API_URL",
        "str",
        f"`{DEFAULT_GITHUB_API_URL}`",
        _parse_url,
        "an http(s) URL",
        _const(DEFAULT_GITHUB_API_URL),
    ),
    Setting(
        "GITHUB_WEB_URL",
        "CRAFT_APPS_RELEASE_GITHUB_WEB_URL",
        "str",
        f"`{DEFAULT_GITHUB_WEB_URL}`",
        _parse_url,
        "an http(s) URL",
        _const(DEFAULT_GITHUB_WEB_URL),
    ),
    Setting(
        "STATE_DIR",
        "CRAFT_APPS_STATE_DIR",
        "path",
        "`<BASE_DIR>/var/craft_apps` (`~/.local/state/craft_apps` without `BASE_DIR`): ignore `/var/` in git",
        _parse_path,
        "a string",
        lambda: default_state_dir(),
    ),
    Setting(
        "REDIS_ALIAS",
        "CRAFT_APPS_REDIS_ALIAS",
        "str",
        f'`"{DEFAULT_REDIS_ALIAS}"` (no such `CACHES` alias: no coordination)',
        _parse_text,
        "a string",
        _const(DEFAULT_REDIS_ALIAS),
    ),
    Setting(
        "REDIS_KEY_PREFIX",
        "CRAFT_APPS_RELEASE_REDIS_KEY_PREFIX",
        "str",
        f'`"{DEFAULT_REDIS_KEY_PREFIX}"`',
        _parse_text_or_default,
        "a string",
        _const(DEFAULT_REDIS_KEY_PREFIX),
    ),
    Setting(
        "LEASE_TTL_SECS",
        "CRAFT_APPS_LEASE_TTL_SECS",
        "float",
        f"`{DEFAULT_LEASE_TTL_SECS:g}`",
        _parse_positive_seconds,
        "a positive number of seconds",
        _const(DEFAULT_LEASE_TTL_SECS),
    ),
    Setting(
        "LEASE_RETRY_SECS",
        "CRAFT_APPS_LEASE_RETRY_SECS",
        "float",
        f"`{DEFAULT_LEASE_RETRY_SECS:g}`",
        _parse_positive_seconds,
        "a positive number of seconds",
        _const(DEFAULT_LEASE_RETRY_SECS),
    ),
    Setting(
        "METRICS_TOKEN",
        "CRAFT_APPS_METRICS_TOKEN",
        "str",
        "none: no `/v1/craft_apps/metrics` (it answers 404)",
        non_blank_token,
        "a string",
        _const(None),
        secret=True,
    ),
    Setting(
        "GITHUB_WEBHOOK_SECRET",
        "CRAFT_APPS_RELEASE_GITHUB_WEBHOOK_SECRET",
        "str, comma-separated to accept several (or a list of str)",
        "none: the webhook URL answers 404",
        parse_secret_list,
        "a string or a list of strings",
        _const(None),
        secret=True,
    ),
    Setting(
        "SIGNING_KEY",
        "CRAFT_APPS_SIGNING_KEY",
        "str: an Ed25519 private key, base64 (`craft_apps_keys generate`) or PKCS#8 PEM",
        "none: answers are not signed ([signed feed](signed-feed.md))",
        _parse_signing_key,
        "an Ed25519 private key",
        _const(None),
        secret=True,
    ),
    Setting(
        "SIGNING_KEY_PREVIOUS",
        "CRAFT_APPS_SIGNING_KEY_PREVIOUS",
        "str, as `SIGNING_KEY`",
        "none: while rotating, the key being retired, which signs too",
        _parse_signing_key,
        "an Ed25519 private key",
        _const(None),
        secret=True,
    ),
    Setting(
        "SIGNING_VALIDITY_SECS",
        "CRAFT_APPS_SIGNING_VALIDITY_SECS",
        "int",
        f"`{DEFAULT_VALIDITY_SECS}` (3 days), never below the polling interval, at most "
        f"`{MAX_VALIDITY_SECS}` (a year)",
        _parse_int,
        "a whole number of seconds",
        _const(DEFAULT_VALIDITY_SECS),
        lambda: _poll_interval(),
        maximum=MAX_VALIDITY_SECS,
    ),
)
# The CDN purge (docs/cdn.md), read together by ``cdn_purge_resolved``.
SETTINGS += (
    Setting(
        "CDN_PURGE_KIND",
        "CRAFT_APPS_CDN_PURGE_KIND",
        "str: `none`, `http` (Varnish, Fastly, a purge module), `cloudflare`, or the dotted path "
        "of a purge backend class",
        "`none`: no purge, a change reaches launchers behind a CDN when its copy is due",
        _parse_purge_kind,
        "none, " + ", ".join(PURGE_BACKENDS) + " or a dotted path",
        _const("none"),
    ),
    Setting(
        "CDN_PURGE_URL",
        "CRAFT_APPS_CDN_PURGE_URL",
        "str: for `http`, a URL template with `{path}`; for `cloudflare`, the API's base URL",
        f"none for `http`; `{DEFAULT_CLOUDFLARE_API_URL}` for `cloudflare`",
        _parse_purge_url,
        "an http(s) URL",
        _const(None),
    ),
    Setting(
        "CDN_PURGE_METHOD",
        "CRAFT_APPS_CDN_PURGE_METHOD",
        "str: `PURGE` (one request per URL) or `BAN` (one per path prefix)",
        "`PURGE`",
        _parse_choice(CDN_PURGE_METHODS, str.upper),
        "PURGE or BAN",
        _const("PURGE"),
    ),
    Setting(
        "CDN_PURGE_TOKEN",
        "CRAFT_APPS_CDN_PURGE_TOKEN",
        "str: Cloudflare's API token (Bearer), or Fastly's `Fastly-Key`",
        "none (never logged, never written; the status says only whether it is set)",
        non_blank_token,
        "a string",
        _const(None),
        secret=True,
    ),
    Setting(
        "CDN_PURGE_ZONE",
        "CRAFT_APPS_CDN_PURGE_ZONE",
        "str: the Cloudflare zone id",
        "none",
        _parse_text_or_default,
        "a string",
        _const(None),
    ),
    Setting(
        "CDN_PUBLIC_URL",
        "CRAFT_APPS_CDN_PUBLIC_URL",
        "str: the public base URL launchers use, e.g. `https://updates.example.com`",
        "none",
        _parse_purge_url,
        "an http(s) URL",
        _const(None),
    ),
    Setting(
        "CDN_PURGE_TIMEOUT_SECS",
        "CRAFT_APPS_CDN_PURGE_TIMEOUT_SECS",
        "float",
        f"`{DEFAULT_CDN_PURGE_TIMEOUT_SECS:g}`: each purge request's connect and read timeout",
        _parse_positive_seconds,
        "a positive number of seconds",
        _const(DEFAULT_CDN_PURGE_TIMEOUT_SECS),
    ),
)
BY_KEY: dict[str, Setting] = {setting.key: setting for setting in SETTINGS}
CDN_PURGE_KEYS = tuple(setting.key for setting in SETTINGS if setting.key.startswith("CDN_"))
ENV_VARS: dict[str, str] = {setting.key: setting.env for setting in SETTINGS}


def describe(key: str) -> str:
    """How to name a setting in a message: where it can be set."""
    return f"CRAFT_APPS[{key!r}] (environment variable {BY_KEY[key].env})"


def _raw(key: str) -> tuple[Any, str] | None:
    """The configured value of ``key`` and where it came from, or None when unset."""
    configured = getattr(settings, "CRAFT_APPS", None) or {}
    if isinstance(configured, dict) and key in configured:
        return configured[key], f"CRAFT_APPS[{key!r}]"
    env = BY_KEY[key].env
    if env in os.environ:
        return os.environ[env], env
    return None


def configured_value(key: str) -> tuple[Any, str] | None:
    """The value ``key`` is configured with and where (the dict's key or the variable), as
    given; None when unset. For checks that look at the text itself (a placeholder)."""
    return _raw(key)


def resolve(key: str) -> Resolved[Any]:
    """The setting's value from the dict, else the environment, else its default; a malformed
    value is replaced by the default and a value below the minimum raised to it, each reported
    as a problem."""
    setting = BY_KEY[key]
    default = setting.default()
    raw = _raw(key)
    resolved: Resolved[Any] = Resolved(default)
    if raw is not None:
        value, source = raw
        try:
            parsed = setting.parse(value)
            if parsed is not None:  # None: blank, which means the default
                resolved.value = parsed
        except (TypeError, ValueError) as err:
            details: dict[str, Any] = {"key": key, "source": source}
            if setting.secret:
                details["type"] = type(value).__name__
                # A key names what is wrong with it (``signing.UnusableKey``), never its text.
                problem = getattr(err, "problem", "invalid_secret")
                details["reason"] = str(err) if problem != "invalid_secret" else ""
                resolved.problems.append(Problem(problem, details))
            else:
                details.update(value=value, default=default)
                resolved.problems.append(Problem("invalid_value", details))
    if setting.maximum is not None and resolved.value > setting.maximum:
        details = {"key": key, "value": resolved.value, "maximum": setting.maximum, "default": default}
        resolved.problems.append(Problem("above_maximum", details))
        resolved.value = default
    if setting.minimum is not None:
        minimum = setting.minimum()
        if resolved.value < minimum:
            details = {"key": key, "value": resolved.value, "minimum": minimum}
            resolved.problems.append(Problem("below_minimum", details))
            resolved.value = minimum
    return resolved


def parse_app_list(value: object) -> tuple[list[AppSpec], list[str]]:
    """Reads ``key=Name=org/repo,...`` (or a list of such strings or of 3-tuples).

    Returns the valid apps (keys lowercased, first of a duplicate kept) and one reason per
    skipped entry.
    """
    entries: Iterable[object]
    if isinstance(value, str):
        entries = [part for part in value.split(",") if part.strip()]
    elif isinstance(value, list | tuple):
        entries = value
    else:
        return [], [f"expected a string like 'key=Name=org/repo,...', got {type(value).__name__}"]
    apps: list[AppSpec] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for entry in entries:
        parts: list[str]
        if isinstance(entry, str):
            parts = [p.strip() for p in entry.strip().split("=", 2)]
        elif isinstance(entry, list | tuple) and all(isinstance(p, str) for p in entry):
            parts = [p.strip() for p in entry]
        else:
            skipped.append(f"{entry!r}: not a 'key=Name=org/repo' string")
            continue
        reason = _app_entry_problem(parts)
        if reason is None and parts[0].lower() in seen:
            reason = f"app key {parts[0].lower()!r} is listed twice"
        if reason is not None:
            skipped.append(f"{'='.join(parts)!r}: {reason}")
            continue
        key = parts[0].lower()
        seen.add(key)
        apps.append(AppSpec(key=key, name=parts[1], repo=parts[2]))
    return apps, skipped


def _app_entry_problem(parts: list[str]) -> str | None:
    if len(parts) != 3:
        return "needs three parts, key=Name=org/repo"
    key, name, repo = parts
    if not key:
        return "the app key is empty"
    if not all(c.isalnum() or c in "-_." for c in key):
        return "the app key may only hold letters, digits, '-', '_' and '.'"
    if not name:
        return "the display name is empty"
    pieces = repo.split("/")
    if len(pieces) != 2 or not all(pieces) or any(c.isspace() for c in repo):
        return "the repository must be organization/project"
    return None


class Value(Generic[T]):
    """A setting's value, resolved anew at every access (``app_settings.GITHUB_API_URL``)."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __get__(self, instance: object, owner: type | None = None) -> T:
        value: T = resolve(self.key).value
        return value


class Derived(Generic[T]):
    """A setting worked out from several keys: ``compute`` returns it with its problems.

    With ``inputs`` (the raw values it depends on), the last result is kept and worked out again
    only when an input differs: the endpoint reads ``APPS``, ``STATE_DIR`` and ``SIGNING`` on
    every request, still at call time, without parsing them each time.
    """

    def __init__(
        self, compute: Callable[[], Resolved[T]], inputs: Callable[[], object] | None = None
    ) -> None:
        self._compute = compute
        self._inputs = inputs
        self._kept: tuple[object, Resolved[T]] | None = None

    def resolved(self) -> Resolved[T]:
        """The value and its problems, from the settings as they are now."""
        if self._inputs is None:
            return self._compute()
        inputs, kept = self._inputs(), self._kept
        if kept is not None and kept[0] == inputs:
            return kept[1]
        resolved = self._compute()
        self._kept = (inputs, resolved)
        return resolved

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Derived[T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object, owner: type | None = None) -> T | Derived[T]:
        return self if instance is None else self.resolved().value


# --- GitHub and polling: the apps, the GitHub App -------------------------------------------------


def _resolve_apps() -> Resolved[tuple[AppSpec, ...]]:
    listed = _listed_apps()
    private = resolve("PRIVATE_APPS")
    keys = {app.key for app in listed.value}
    unknown = [key for key in private.value if key not in keys]
    if unknown:
        private.problems.append(Problem("private_app_unknown", {"keys": ", ".join(unknown)}))
    apps = tuple(replace(app, private=app.key in private.value) for app in listed.value)
    return Resolved(apps, listed.problems + private.problems)


def _listed_apps() -> Resolved[tuple[AppSpec, ...]]:
    raw = _raw("APPS")
    if raw is None:
        return Resolved(DEFAULT_APPS)
    value, source = raw
    apps, skipped = parse_app_list(value)
    problems = [Problem("app_skipped", {"source": source, "reason": reason}) for reason in skipped]
    if not apps:
        problems.append(Problem("no_valid_app", {"source": source, "count": len(DEFAULT_APPS)}))
        return Resolved(DEFAULT_APPS, problems)
    return Resolved(tuple(apps), problems)


def _resolve_github_app() -> Resolved[GitHubApp | None]:
    """The GitHub App the settings describe; None when neither its id nor its key is set,
    or (with a problem) when only one of them is."""
    app_id, key = resolve("GITHUB_APP_ID"), resolve("GITHUB_APP_PRIVATE_KEY")
    installation = resolve("GITHUB_APP_INSTALLATION_ID")
    problems = app_id.problems + key.problems + installation.problems
    if app_id.value is None and key.value is None:
        return Resolved(None, problems)
    if app_id.value is None or key.value is None:
        missing = "GITHUB_APP_ID" if app_id.value is None else "GITHUB_APP_PRIVATE_KEY"
        unusable = any(problem.code == GITHUB_APP_KEY_UNUSABLE for problem in problems)
        if not unusable:  # an unusable key is its own error already
            problems.append(Problem("github_app_incomplete", {"missing": describe(missing)}))
        return Resolved(None, problems)
    return Resolved(GitHubApp(app_id.value, key.value, installation.value), problems)


# --- The host and the fleet: the state directory, the lease ---------------------------------------


def _state_dir_inputs() -> object:
    return (_raw("STATE_DIR"), getattr(settings, "BASE_DIR", None), os.environ.get("HOME"))


def _resolve_lease_timing() -> Resolved[LeaseTiming]:
    """The lease's TTL and retry; the defaults when they don't satisfy ``LeaseTiming``'s rule."""
    ttl = resolve("LEASE_TTL_SECS")
    retry = resolve("LEASE_RETRY_SECS")
    problems = ttl.problems + retry.problems
    try:
        timing = LeaseTiming(ttl_ms=round(ttl.value * 1000), retry_ms=round(retry.value * 1000))
    except ValueError as err:
        problems.append(Problem("lease_timing", {"reason": str(err)}))
        timing = LeaseTiming()
    return Resolved(timing, problems)


# --- Signing and the CDN ----------------------------------------------------------------------------

_SIGNING_INPUTS = (
    "SIGNING_KEY",
    "SIGNING_KEY_PREVIOUS",
    "SIGNING_VALIDITY_SECS",
    "POLL_INTERVAL_SECS",  # the window's minimum
    "GITHUB_TOKEN",  # the interval's default and minimum
)


def _resolve_signing() -> Resolved[SigningConfig | None]:
    """The keys that sign (``SIGNING_KEY`` first, then ``SIGNING_KEY_PREVIOUS``, one of a key
    given twice) and the window; None when no usable key is set."""
    current, previous = resolve("SIGNING_KEY"), resolve("SIGNING_KEY_PREVIOUS")
    window = resolve("SIGNING_VALIDITY_SECS")
    problems = current.problems + previous.problems + window.problems
    keys: dict[str, SigningKey] = {}
    for key in (current.value, previous.value):
        if key is not None:
            keys.setdefault(key.key_id, key)
    # Never past a year, even raised to a polling interval that is: an instant past year
    # 9999 can't be written, and no setting may make an answer fail.
    window_s = min(window.value, MAX_VALIDITY_SECS)
    config = SigningConfig(tuple(keys.values()), window_s) if keys else None
    return Resolved(config, problems)


def _resolve_cdn_purge() -> Resolved[PurgeTarget | None]:
    """The CDN purge target (``purge_target``); None: no purge."""
    resolved = {key: resolve(key) for key in CDN_PURGE_KEYS}
    target = purge_target({key: value.value for key, value in resolved.items()})
    target.problems[:0] = [problem for value in resolved.values() for problem in value.problems]
    return target


class CraftAppsSettings:
    """Typed access to the settings; every attribute is read anew on each access."""

    POLLING_ENABLED = Value[bool]("POLLING_ENABLED")
    COORDINATION_ENABLED = Value[bool]("COORDINATION_ENABLED")
    GITHUB_TOKEN = Value[str | None]("GITHUB_TOKEN")
    POLL_INTERVAL_SECS = Value[int]("POLL_INTERVAL_SECS")
    MAX_BACKOFF_SECS = Value[int]("MAX_BACKOFF_SECS")
    APPS = Derived(_resolve_apps, lambda: (_raw("APPS"), _raw("PRIVATE_APPS")))
    GITHUB_API_URL = Value[str]("GITHUB_API_URL")
    GITHUB_APP = Derived(_resolve_github_app)
    GITHUB_WEB_URL = Value[str]("GITHUB_WEB_URL")
    # The secrets a webhook delivery may be signed with; None: the webhook is off.
    GITHUB_WEBHOOK_SECRET = Value[tuple[str, ...] | None]("GITHUB_WEBHOOK_SECRET")
    CDN_PUBLIC_URL = Value[str | None]("CDN_PUBLIC_URL")
    CDN_PURGE = Derived(_resolve_cdn_purge)
    STATE_DIR = Derived(lambda: resolve("STATE_DIR"), _state_dir_inputs)
    REDIS_ALIAS = Value[str]("REDIS_ALIAS")
    REDIS_KEY_PREFIX = Value[str]("REDIS_KEY_PREFIX")
    LEASE_TIMING = Derived(_resolve_lease_timing)
    METRICS_TOKEN = Value[str | None]("METRICS_TOKEN")
    SIGNING = Derived(_resolve_signing, lambda: tuple(_raw(key) for key in _SIGNING_INPUTS))

    def signing_resolved(self) -> Resolved[SigningConfig | None]:
        """The signing keys and window with their problems (``SIGNING`` is the value)."""
        return CraftAppsSettings.SIGNING.resolved()

    def cdn_purge_resolved(self) -> Resolved[PurgeTarget | None]:
        """The CDN purge target with its problems (``CDN_PURGE`` is the value)."""
        return CraftAppsSettings.CDN_PURGE.resolved()

    def problems(self) -> list[Problem]:
        """Every setting's problems, in the table's order (each reported once)."""
        found: list[Problem] = []
        for setting in SETTINGS:
            if setting.key in _REPORTED_WITH_ANOTHER:
                continue
            compound = _COMPOUND.get(setting.key)
            found.extend(compound.resolved().problems if compound else resolve(setting.key).problems)
        unknown = self.unknown_keys()
        if unknown:
            found.append(Problem("unknown_keys", {"keys": ", ".join(unknown)}))
        return found

    def unknown_keys(self) -> list[str]:
        """The keys of ``CRAFT_APPS`` that name no setting, sorted."""
        configured = getattr(settings, "CRAFT_APPS", None) or {}
        if not isinstance(configured, dict):
            return []
        return sorted(str(key) for key in configured if key not in BY_KEY)


# Settings whose problems are reported as one configuration, under the first key's name.
_COMPOUND: dict[str, Derived[Any]] = {
    "CDN_PURGE_KIND": CraftAppsSettings.CDN_PURGE,
    "GITHUB_APP_ID": CraftAppsSettings.GITHUB_APP,
    "APPS": CraftAppsSettings.APPS,
    "LEASE_TTL_SECS": CraftAppsSettings.LEASE_TIMING,
    "SIGNING_KEY": CraftAppsSettings.SIGNING,
}
_REPORTED_WITH_ANOTHER = frozenset(
    {
        *CDN_PURGE_KEYS[1:],  # with CDN_PURGE_KIND
        "PRIVATE_APPS",  # with APPS, whose keys it names
        "GITHUB_APP_PRIVATE_KEY",  # with GITHUB_APP_ID
        "GITHUB_APP_INSTALLATION_ID",
        "LEASE_RETRY_SECS",  # with LEASE_TTL_SECS
        "SIGNING_KEY_PREVIOUS",  # with SIGNING_KEY
        "SIGNING_VALIDITY_SECS",
    }
)


@dataclass(frozen=True)
class GitHubApp:
    """A GitHub App to authenticate as: its id, its key and, when configured, its installation."""

    app_id: str
    private_key: GitHubAppKey = field(repr=False)
    installation_id: int | None = None


@dataclass(frozen=True)
class PurgeTarget:
    """Where and how to ask the CDN to drop an answer: ``kind`` as set (``http``, ``cloudflare``
    or a dotted path) names the class that makes its requests (``cdn.backends``).
    The token is left out of the repr, so a log line naming the target never holds it."""

    kind: str
    url: str
    method: str
    public_url: str
    timeout_s: float
    token: str | None = field(default=None, repr=False)
    zone: str | None = None

    @property
    def backend(self) -> str:
        """The dotted path of the class that makes its requests (``cdn.backends``)."""
        return PURGE_BACKENDS.get(self.kind, self.kind)

    @property
    def public_host(self) -> str:
        """The host (and port) launchers ask: the ``Host`` a purge by URL names."""
        return self.public_url.split("//", 1)[1].split("/", 1)[0]


@functools.cache
def purge_backend(path: str) -> Any:
    """An instance of the purge backend class ``path`` names (a ``cdn.backends.base.PurgeBackend``,
    typed ``Any`` here since the settings sit below the CDN package). Raises ImportError."""
    return import_string(path)()


def purge_target(values: Mapping[str, Any]) -> Resolved[PurgeTarget | None]:
    """The purge target the ``CDN_*`` settings' ``values`` describe; None with a problem when
    they are incomplete (a purge that can't work must not look configured), None when off."""
    kind = values["CDN_PURGE_KIND"]
    if kind == "none":
        return Resolved(None)
    try:
        backend = purge_backend(PURGE_BACKENDS.get(kind, kind))
    except Exception as err:  # a dotted path that names no usable class
        return Resolved(None, [Problem("cdn_purge_backend", {"value": kind, "reason": type(err).__name__})])
    url = values["CDN_PURGE_URL"] or backend.default_url
    needed = {key: url if key == "CDN_PURGE_URL" else values[key] for key in backend.needs}
    missing = [key for key, value in needed.items() if value is None]
    if missing:
        details = {"kind": kind, "missing": "; ".join(describe(key) for key in missing)}
        return Resolved(None, [Problem("cdn_purge_incomplete", details)])
    target = PurgeTarget(
        kind,
        str(url),
        values["CDN_PURGE_METHOD"],
        values["CDN_PUBLIC_URL"],
        values["CDN_PURGE_TIMEOUT_SECS"],
        token=values["CDN_PURGE_TOKEN"],
        zone=values["CDN_PURGE_ZONE"],
    )
    problem = backend.problem(target)
    return Resolved(None, [problem]) if problem is not None else Resolved(target)


def default_state_dir() -> Path:
    """``<BASE_DIR>/var/craft_apps`` when the site defines BASE_DIR, else ``~/.local/state``."""
    base_dir = getattr(settings, "BASE_DIR", None)
    if base_dir:
        return Path(base_dir) / "var" / "craft_apps"
    return Path.home() / ".local" / "state" / "craft_apps"


app_settings = CraftAppsSettings()
