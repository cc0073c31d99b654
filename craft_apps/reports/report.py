"""One install report read from a request's body: the fields, their rules and the one-line
error for a malformed one (pure: no Django, no I/O). See docs/reports.md."""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from craft_apps.kernel.text import one_line
from craft_apps.kernel.versions import version_text

INSTALLED, FAILED, CRASHED, ROLLED_BACK = "installed", "failed", "crashed", "rolled_back"
OUTCOMES = (INSTALLED, FAILED, CRASHED, ROLLED_BACK)
FAILURES = (FAILED, CRASHED, ROLLED_BACK)  # what a guarded rollout counts against a release
REQUIRED = ("app_key", "install_id", "version", "outcome")
OPTIONAL = ("previous_version", "channel", "os", "arch")  # read for their form only, never kept
MAX_FIELD_CHARS = 64  # a version's text too: it becomes part of a Redis key


@dataclass(frozen=True, slots=True)
class Report:
    """A valid report: the app, the version as the endpoint serves it, the outcome and the
    install's id (canonical UUID text; hashed before anything keeps it)."""

    app: str
    version: str
    outcome: str
    install_id: str


class Malformed(ValueError):
    """Why a body is not a report, in one line for the 400 answer."""


def parse_report(body: bytes, apps: Collection[str]) -> Report:
    """The report ``body`` holds, for one of ``apps``; raises ``Malformed`` otherwise."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise Malformed("the body is not a JSON object")
    fields = {name: _text(data, name, required=True) for name in REQUIRED}
    for name in OPTIONAL:
        _text(data, name, required=False)
    outcome = fields["outcome"]
    if outcome not in OUTCOMES:
        raise Malformed(f"unknown outcome {_quoted(outcome)}: one of {', '.join(OUTCOMES)}")
    app = fields["app_key"].lower()
    if app not in apps:
        raise Malformed(f"this host serves no app {_quoted(fields['app_key'])}")
    version = version_text(fields["version"])
    if version is None or len(version) > MAX_FIELD_CHARS:
        raise Malformed(f"version {_quoted(fields['version'])} is not a SemVer version")
    return Report(app, version, outcome, _install_id(fields["install_id"]))


def _text(data: dict[str, Any], name: str, *, required: bool) -> str:
    value = data.get(name)
    if value is None and not required:
        return ""
    if value is None:
        raise Malformed(f"the field {name!r} is missing")
    if not isinstance(value, str) or not value.strip():
        raise Malformed(f"the field {name!r} is not a non-empty string")
    if len(value) > MAX_FIELD_CHARS:
        raise Malformed(f"the field {name!r} is over {MAX_FIELD_CHARS} characters")
    return value.strip()


def _install_id(text: str) -> str:
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise Malformed("the field 'install_id' is not a UUID") from None


def _quoted(text: str) -> str:
    return repr(one_line(text, 40))
