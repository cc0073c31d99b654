"""Which version of the site's notices and controls each web process of the host serves.

After each look that read the database, a web process's feed writes its pid, that version and the
time to ``<STATE_DIR>/serving/<pid>.json`` (moved in place whole). The CDN purge reads them all
to purge a change once every web process serves it; a process gone stops writing, its report
ages. See docs/cdn.md ("Purge on change")."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from craft_apps.conf import app_settings
from craft_apps.kernel.text import one_line

logger = logging.getLogger(__name__)

DIRECTORY = "serving"  # under the state directory
MAX_BYTES = 4096  # a report is a few dozen bytes; a bigger file is not ours
FORGET_AFTER_MS = 10 * 60 * 1000  # a reader deletes a report this old: its process is gone


@dataclass(frozen=True)
class ServedReport:
    """One web process's last word: the notices version it serves (None: it never read the
    database) and when it said so (Unix ms)."""

    pid: int
    version: int | None
    at_ms: int


def reports_dir(state_dir: Path) -> Path:
    return state_dir / DIRECTORY


def write_report(state_dir: Path, report: ServedReport) -> None:
    """Puts ``report`` in place of this pid's last one. Raises OSError."""
    directory = reports_dir(state_dir)
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"pid": report.pid, "version": report.version, "at_ms": report.at_ms})
    handle, temporary = tempfile.mkstemp(prefix=f".{report.pid}.", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, directory / f"{report.pid}.json")
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_reports(state_dir: Path, now_ms: int) -> tuple[ServedReport, ...]:
    """Every report of the host, whatever its age; one that can't be read is left out, and one
    older than ``FORGET_AFTER_MS`` is deleted."""
    try:
        names = [entry for entry in os.scandir(reports_dir(state_dir)) if entry.name.endswith(".json")]
    except OSError:  # no web process reported yet
        return ()
    found = []
    for entry in names:
        report = _read(Path(entry.path))
        if report is None:
            continue
        if now_ms - report.at_ms > FORGET_AFTER_MS:
            Path(entry.path).unlink(missing_ok=True)
            continue
        found.append(report)
    return tuple(found)


def _read(path: Path) -> ServedReport | None:
    try:
        with path.open("rb") as file:
            data = json.loads(file.read(MAX_BYTES + 1)[:MAX_BYTES])
        version = data["version"]
        report = ServedReport(int(data["pid"]), None if version is None else int(version), int(data["at_ms"]))
    except (OSError, ValueError, TypeError, KeyError) as err:
        logger.debug("Craft apps notices: can't read the report %s: %s", path, one_line(err, 200))
        return None
    return report


class Reporter:
    """Writes this process's reports to the state directory (the configured one when None);
    says once when it can't."""

    def __init__(self, state_dir: Path | None = None) -> None:
        self.state_dir = state_dir
        self._failing = False

    def __call__(self, version: int | None, now_ms: int) -> None:
        state_dir = app_settings.STATE_DIR if self.state_dir is None else self.state_dir
        try:
            write_report(state_dir, ServedReport(os.getpid(), version, now_ms))
        except OSError as err:
            if not self._failing:
                logger.warning(
                    "Craft apps notices: can't say which version this process serves in %s (%s); "
                    "the CDN purge waits its longest for it",
                    reports_dir(state_dir),
                    one_line(err, 200),
                )
            self._failing = True
            return
        self._failing = False
