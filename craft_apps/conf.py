"""The app's settings, read at call time so ``override_settings`` and the environment both work.

Each setting comes from ``settings.CRAFT_APPS[KEY]``, else from its environment variable, else
from its default. Every value is resolved by one function that also reports what was wrong with
it; the properties return the value, ``checks`` reports the problems. So a malformed value never
crashes anything: it is replaced by the default (or raised to its minimum) and named by a check.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from django.conf import settings

from craft_apps.domain import AppSpec, LeaseTiming

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

# Setting key -> environment variable. The order is the README's order.
ENV_VARS: dict[str, str | None] = {
    "POLLING_ENABLED": "CRAFT_APPS_RELEASE_POLLING_ENABLED",
    "COORDINATION_ENABLED": "CRAFT_APPS_RELEASE_COORDINATION_ENABLED",
    "POLL_INTERVAL_SECS": "CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS",
    "MAX_BACKOFF_SECS": "CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS",
    "GITHUB_TOKEN": "CRAFT_APPS_RELEASE_GITHUB_TOKEN",
    "APPS": "CRAFT_APPS_RELEASE_APPS",
    "GITHUB_API_URL": "CRAFT_APPS_RELEASE_GITHUB_API_URL",
    "GITHUB_WEB_URL": "CRAFT_APPS_RELEASE_GITHUB_WEB_URL",
    "STATE_DIR": "CRAFT_APPS_STATE_DIR",
    "REDIS_ALIAS": "CRAFT_APPS_REDIS_ALIAS",
    "REDIS_KEY_PREFIX": "CRAFT_APPS_RELEASE_REDIS_KEY_PREFIX",
    "LEASE_TTL_SECS": "CRAFT_APPS_LEASE_TTL_SECS",
    "LEASE_RETRY_SECS": "CRAFT_APPS_LEASE_RETRY_SECS",
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Problem:
    """Something wrong with one setting, as a system check will report it."""

    id: str  # "craft_apps.E001"
    msg: str
    hint: str

    @property
    def is_error(self) -> bool:
        return ".E" in self.id


@dataclass
class Resolved(Generic[T]):
    value: T
    problems: list[Problem] = field(default_factory=list)


def describe(key: str) -> str:
    """How to name a setting in a message: where it can be set."""
    env = ENV_VARS.get(key)
    return f"CRAFT_APPS[{key!r}]" + (f" (environment variable {env})" if env else "")


def _raw(key: str) -> tuple[Any, str] | None:
    """The configured value of ``key`` and where it came from, or None when unset."""
    configured = getattr(settings, "CRAFT_APPS", None) or {}
    if isinstance(configured, dict) and key in configured:
        return configured[key], f"CRAFT_APPS[{key!r}]"
    env = ENV_VARS.get(key)
    if env is not None and env in os.environ:
        return os.environ[env], env
    return None


def _resolve(key: str, default: T, parse: Callable[[object], T], expected: str) -> Resolved[T]:
    """The configured value parsed, or the default with an E001 naming where it was set."""
    raw = _raw(key)
    if raw is None:
        return Resolved(default)
    value, source = raw
    try:
        return Resolved(parse(value))
    except (TypeError, ValueError):
        return Resolved(
            default,
            [
                Problem(
                    "craft_apps.E001",
                    f"{source} is {value!r}, which is not {expected}; using {default!r}.",
                    f"Set {describe(key)} to {expected}.",
                )
            ],
        )


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


def _bool(key: str, default: bool) -> Resolved[bool]:
    return _resolve(key, default, _parse_bool, "true or false")


def _int(key: str, default: int) -> Resolved[int]:
    return _resolve(key, default, _parse_int, "a whole number of seconds")


def _seconds(key: str, default: float) -> Resolved[float]:
    return _resolve(key, default, _parse_positive_seconds, "a positive number of seconds")


def _text(key: str, default: str) -> Resolved[str]:
    return _resolve(key, default, _parse_text, "a string")


def _url(key: str, default: str) -> Resolved[str]:
    resolved = _text(key, default)
    url = resolved.value.rstrip("/")
    if not url.startswith(("http://", "https://")) or len(url.split("//", 1)[1]) == 0:
        resolved.problems.append(
            Problem(
                "craft_apps.E001",
                f"{describe(key)} is {resolved.value!r}, which is not an http(s) URL; using {default!r}.",
                f"Set {describe(key)} to a URL such as {default!r}.",
            )
        )
        url = default
    resolved.value = url
    return resolved


def non_blank_token(value: object) -> str | None:
    """The token, trimmed; None when unset, empty or blank."""
    if not isinstance(value, str):
        return None
    token = value.strip()
    return token or None


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


class CraftAppsSettings:
    """Typed access to the settings; every attribute is read anew on each access.

    The two settings the endpoint reads on every request (``APPS``, ``STATE_DIR``) keep their
    last result together with the raw inputs it came from, and are worked out again only when
    an input differs: still read at call time, without parsing on every request.
    """

    def __init__(self) -> None:
        self._memo: dict[str, tuple[object, Resolved[Any]]] = {}

    def _memoized(self, name: str, inputs: object, compute: Callable[[], Resolved[T]]) -> Resolved[T]:
        kept = self._memo.get(name)
        if kept is not None and kept[0] == inputs:
            return kept[1]
        resolved = compute()
        self._memo[name] = (inputs, resolved)
        return resolved

    def polling_enabled_resolved(self) -> Resolved[bool]:
        return _bool("POLLING_ENABLED", True)

    @property
    def POLLING_ENABLED(self) -> bool:
        return self.polling_enabled_resolved().value

    @property
    def COORDINATION_ENABLED(self) -> bool:
        return _bool("COORDINATION_ENABLED", True).value

    @property
    def GITHUB_TOKEN(self) -> str | None:
        raw = _raw("GITHUB_TOKEN")
        return None if raw is None else non_blank_token(raw[0])

    def poll_interval_resolved(self) -> Resolved[int]:
        has_token = self.GITHUB_TOKEN is not None
        default = DEFAULT_INTERVAL_SECS_WITH_TOKEN if has_token else DEFAULT_INTERVAL_SECS_WITHOUT_TOKEN
        minimum = MIN_INTERVAL_SECS_WITH_TOKEN if has_token else MIN_INTERVAL_SECS_WITHOUT_TOKEN
        resolved = _int("POLL_INTERVAL_SECS", default)
        if resolved.value < minimum:
            resolved.problems.append(
                Problem(
                    "craft_apps.W002",
                    f"{describe('POLL_INTERVAL_SECS')} is {resolved.value}, below the minimum of "
                    f"{minimum} s {'with' if has_token else 'without'} a GitHub token; using {minimum}.",
                    f"Set it to at least {minimum}"
                    + ("." if has_token else ", or set CRAFT_APPS_RELEASE_GITHUB_TOKEN for a 60 s minimum."),
                )
            )
            resolved.value = minimum
        return resolved

    @property
    def POLL_INTERVAL_SECS(self) -> int:
        return self.poll_interval_resolved().value

    def max_backoff_resolved(self) -> Resolved[int]:
        interval = self.POLL_INTERVAL_SECS
        resolved = _int("MAX_BACKOFF_SECS", DEFAULT_MAX_BACKOFF_SECS)
        if resolved.value < interval:
            resolved.problems.append(
                Problem(
                    "craft_apps.W003",
                    f"{describe('MAX_BACKOFF_SECS')} is {resolved.value}, below the polling interval; "
                    f"using the interval, {interval}.",
                    f"Set it to at least the polling interval ({interval}).",
                )
            )
            resolved.value = interval
        return resolved

    @property
    def MAX_BACKOFF_SECS(self) -> int:
        return self.max_backoff_resolved().value

    def apps_resolved(self) -> Resolved[tuple[AppSpec, ...]]:
        return self._memoized("APPS", _raw("APPS"), self._resolve_apps)

    def _resolve_apps(self) -> Resolved[tuple[AppSpec, ...]]:
        raw = _raw("APPS")
        if raw is None:
            return Resolved(DEFAULT_APPS)
        value, source = raw
        apps, skipped = parse_app_list(value)
        problems = [
            Problem(
                "craft_apps.W001",
                f"{source}: skipped entry {reason}.",
                f"Write each entry of {describe('APPS')} as key=Name=org/repo, separated by commas.",
            )
            for reason in skipped
        ]
        if not apps:
            problems.append(
                Problem(
                    "craft_apps.E002",
                    f"{source} lists no valid app; serving the built-in list of {len(DEFAULT_APPS)} apps.",
                    f"Fix {describe('APPS')} or remove it to use the built-in list.",
                )
            )
            return Resolved(DEFAULT_APPS, problems)
        return Resolved(tuple(apps), problems)

    @property
    def APPS(self) -> tuple[AppSpec, ...]:
        return self.apps_resolved().value

    def github_api_url_resolved(self) -> Resolved[str]:
        return _url("GITHUB_API_URL", DEFAULT_GITHUB_API_URL)

    @property
    def GITHUB_API_URL(self) -> str:
        return self.github_api_url_resolved().value

    def github_web_url_resolved(self) -> Resolved[str]:
        return _url("GITHUB_WEB_URL", DEFAULT_GITHUB_WEB_URL)

    @property
    def GITHUB_WEB_URL(self) -> str:
        return self.github_web_url_resolved().value

    def state_dir_resolved(self) -> Resolved[Path]:
        inputs = (_raw("STATE_DIR"), getattr(settings, "BASE_DIR", None), os.environ.get("HOME"))
        return self._memoized("STATE_DIR", inputs, self._resolve_state_dir)

    def _resolve_state_dir(self) -> Resolved[Path]:
        default = default_state_dir()
        resolved = _text("STATE_DIR", str(default))
        path = Path(resolved.value).expanduser() if resolved.value else default
        return Resolved(path, resolved.problems)

    @property
    def STATE_DIR(self) -> Path:
        return self.state_dir_resolved().value

    def redis_alias_resolved(self) -> Resolved[str]:
        return _text("REDIS_ALIAS", DEFAULT_REDIS_ALIAS)

    @property
    def REDIS_ALIAS(self) -> str:
        return self.redis_alias_resolved().value

    def redis_key_prefix_resolved(self) -> Resolved[str]:
        resolved = _text("REDIS_KEY_PREFIX", DEFAULT_REDIS_KEY_PREFIX)
        if not resolved.value:
            resolved.value = DEFAULT_REDIS_KEY_PREFIX
        return resolved

    @property
    def REDIS_KEY_PREFIX(self) -> str:
        return self.redis_key_prefix_resolved().value

    def lease_timing_resolved(self) -> Resolved[LeaseTiming]:
        """The lease's TTL and retry; the defaults when they don't satisfy ``LeaseTiming``'s rule."""
        ttl = _seconds("LEASE_TTL_SECS", DEFAULT_LEASE_TTL_SECS)
        retry = _seconds("LEASE_RETRY_SECS", DEFAULT_LEASE_RETRY_SECS)
        problems = ttl.problems + retry.problems
        try:
            timing = LeaseTiming(ttl_ms=round(ttl.value * 1000), retry_ms=round(retry.value * 1000))
        except ValueError as err:
            problems.append(
                Problem(
                    "craft_apps.E001",
                    f"{describe('LEASE_TTL_SECS')} and {describe('LEASE_RETRY_SECS')}: {err}; "
                    "using the defaults.",
                    "Make the TTL at least twice the retry (the defaults are 30 and 2).",
                )
            )
            timing = LeaseTiming()
        return Resolved(timing, problems)

    @property
    def LEASE_TIMING(self) -> LeaseTiming:
        return self.lease_timing_resolved().value

    def resolvers(self) -> list[Callable[[], Resolved[Any]]]:
        """Every setting's resolver, for the system checks."""
        return [
            self.polling_enabled_resolved,
            lambda: _bool("COORDINATION_ENABLED", True),
            self.poll_interval_resolved,
            self.max_backoff_resolved,
            self.apps_resolved,
            self.github_api_url_resolved,
            self.github_web_url_resolved,
            self.state_dir_resolved,
            self.redis_alias_resolved,
            self.redis_key_prefix_resolved,
            self.lease_timing_resolved,
        ]

    def unknown_keys(self) -> list[str]:
        configured = getattr(settings, "CRAFT_APPS", None) or {}
        if not isinstance(configured, dict):
            return []
        return sorted(str(key) for key in configured if key not in ENV_VARS)


def default_state_dir() -> Path:
    """``<BASE_DIR>/var/craft_apps`` when the site defines BASE_DIR, else ``~/.local/state``."""
    base_dir = getattr(settings, "BASE_DIR", None)
    if base_dir:
        return Path(base_dir) / "var" / "craft_apps"
    return Path.home() / ".local" / "state" / "craft_apps"


app_settings = CraftAppsSettings()
