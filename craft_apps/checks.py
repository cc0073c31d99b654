"""System checks (``manage.py check``): every configuration problem, with what to set.

Ids: ``craft_apps.E001`` a value of the wrong type or form; ``E002`` no valid app in ``APPS``;
``E003`` the Redis alias isn't a django-redis cache; ``E004`` the state directory can't be
created or written; ``E005`` ``CRAFT_APPS`` isn't a dict. ``W001`` a skipped ``APPS`` entry;
``W002`` an interval below the minimum (raised to it); ``W003`` a maximum backoff below the
interval (raised to it); ``W004`` unknown keys in ``CRAFT_APPS``; ``W005`` the Redis alias
without timeouts or with a large pool; ``W006`` the Redis alias sharing its URL (and pool).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from craft_apps.conf import Problem, app_settings, describe
from craft_apps.redis_conn import alias_problems

TAG = "craft_apps"


# Its own tag (``check --tag craft_apps``); none is deploy-only: each one matters on a developer's
# machine as much as on a host.
@register(TAG)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [_message(problem) for problem in configuration_problems()]


def configuration_problems() -> list[Problem]:
    """Every problem with the configuration, errors and warnings, in a stable order."""
    configured = getattr(settings, "CRAFT_APPS", None)
    if configured is not None and not isinstance(configured, dict):
        return [
            Problem(
                "craft_apps.E005",
                f"settings.CRAFT_APPS is a {type(configured).__name__}, not a dict; it is ignored.",
                "Set CRAFT_APPS to a dict such as {'POLL_INTERVAL_SECS': 1800}.",
            )
        ]
    problems: list[Problem] = []
    for resolve in app_settings.resolvers():
        problems.extend(resolve().problems)
    unknown = app_settings.unknown_keys()
    if unknown:
        problems.append(
            Problem(
                "craft_apps.W004",
                f"settings.CRAFT_APPS has unknown keys: {', '.join(unknown)}; they are ignored.",
                "Check their spelling against the README's list of settings.",
            )
        )
    problems.extend(_state_dir_problems(app_settings.STATE_DIR))
    if app_settings.COORDINATION_ENABLED:
        problems.extend(alias_problems(app_settings.REDIS_ALIAS))
    return problems


def _state_dir_problems(state_dir: Path) -> list[Problem]:
    """The directory must exist (or be creatable) and be writable by this user."""
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=state_dir, prefix=".check-", delete=True):
            pass
    except OSError as err:
        reason = err.strerror or type(err).__name__
        return [
            Problem(
                "craft_apps.E004",
                f"The state directory {state_dir} can't be created or written: {reason}.",
                f"Set {describe('STATE_DIR')} to a directory this user ({_user()}) can write.",
            )
        ]
    return []


def _user() -> str:
    try:
        return os.getlogin()
    except OSError:
        return f"uid {os.getuid()}"


def _message(problem: Problem) -> CheckMessage:
    kind = Error if problem.is_error else Warning
    return kind(problem.msg, hint=problem.hint, id=problem.id)
