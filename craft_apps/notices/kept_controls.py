"""The release controls a web process last read, kept in the state directory for the next one.

A worker started while the site's database can't be read (a lock, a server restarting) would
otherwise serve without any control until it can, and a yank would not hold across a worker
restart. So each look that reads the controls writes them here when they differ from what
the file holds (``release_controls.json`` beside the state file, replaced whole, atomically),
and a process that has never read the database applies the file's before it asks the
database. The database always wins once it answers. The file holds nothing secret; anything
it holds that doesn't read as controls is refused whole and treated as none: one line logged,
``FAILURES`` counted, and ``inspect`` says why to ``craft_apps_status``.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import Counter

from craft_apps.controls import ACTIONS, Control, Step
from craft_apps.domain import is_stored_time
from craft_apps.text import one_line

logger = logging.getLogger(__name__)

FILE_NAME = "release_controls.json"
FORMAT_VERSION = 1
MAX_BYTES = 1 << 20  # far above any real set of controls; a bigger file is not ours

FAILURES = Counter(
    "craft_apps_kept_controls_failures",
    "Reads and writes of the release controls kept in the state directory that failed, or "
    "found a file that isn't ours (refused whole), by operation.",
    ["operation"],
    registry=None,
)


def encode(controls: tuple[Control, ...]) -> str:
    rows = [
        {
            "app_key": c.app_key,
            "action": c.action,
            "tag": c.tag,
            "channel": c.channel,
            "percentage": c.percentage,
            "steps": [[s.at_ms, s.percentage] for s in c.steps],
            "paused_at_ms": c.paused_at_ms,
        }
        for c in controls
    ]
    return json.dumps({"v": FORMAT_VERSION, "controls": rows}, sort_keys=True, separators=(",", ":"))


def decode(text: str) -> tuple[Control, ...]:
    """The controls ``text`` holds. Raises ValueError for anything else."""
    document = json.loads(text)
    if not isinstance(document, dict) or document.get("v") != FORMAT_VERSION:
        raise ValueError(f"not format {FORMAT_VERSION}")
    rows = document.get("controls")
    if not isinstance(rows, list):
        raise ValueError("no list of controls")
    return tuple(_control(row) for row in rows)


def _control(row: object) -> Control:
    if not isinstance(row, dict):
        raise ValueError("a control that isn't an object")
    texts = [row.get(name) for name in ("app_key", "action", "tag", "channel")]
    if not all(isinstance(text, str) for text in texts) or row.get("action") not in ACTIONS:
        raise ValueError("a control without its key, action, tag or channel")
    percentage, steps, paused = row.get("percentage"), row.get("steps"), row.get("paused_at_ms")
    if not isinstance(percentage, int) or not _whole(percentage) or not isinstance(steps, list):
        raise ValueError("a control with a percentage or steps of another shape")
    if paused is not None and not is_stored_time(paused):
        raise ValueError("a control paused at no instant")
    read_steps = []
    for step in steps:
        if not (isinstance(step, list) and len(step) == 2 and is_stored_time(step[0]) and _whole(step[1])):
            raise ValueError("a schedule step of another shape")
        read_steps.append(Step(step[0], step[1]))
    app_key, action, tag, channel = (str(text) for text in texts)
    return Control(app_key, action, tag, channel, int(percentage), tuple(read_steps), paused)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 100


def _read(path: Path) -> tuple[tuple[Control, ...], str]:
    """The controls the file at ``path`` holds, and its text. Raises FileNotFoundError, another
    OSError, or ValueError for a file that isn't ours."""
    with path.open("rb") as file:
        raw = file.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise ValueError(f"over {MAX_BYTES} bytes")
    text = raw.decode("utf-8")
    return decode(text), text


def _reason(err: Exception) -> str:
    return one_line(f"{type(err).__name__}: {err}", 300)


@dataclass(frozen=True)
class KeptFile:
    """What ``inspect`` found: the file's path, and its controls or why they can't be read."""

    path: Path
    exists: bool
    controls: tuple[Control, ...] | None = None  # None: absent or refused
    problem: str | None = None


def inspect(directory: Path) -> KeptFile:
    """Reads the file in ``directory`` as a web process would; logs nothing, never raises."""
    path = directory / FILE_NAME
    try:
        controls, _ = _read(path)
    except FileNotFoundError:
        return KeptFile(path, exists=False)
    except (OSError, ValueError) as err:
        return KeptFile(path, exists=path.exists(), problem=_reason(err))
    return KeptFile(path, exists=True, controls=controls)


class KeptControls:
    """The file in one state directory: ``load_changed`` and ``save`` never raise; a failure is
    one line logged when it starts (and again after a success)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE_NAME
        self._failing = False
        self._saved: str | None = None
        self._seen: tuple[int, int, int] | None = None  # the file's identity at the last load
        self._lock = threading.Lock()  # a request's load and the background look's save

    def load_changed(self) -> tuple[Control, ...] | None:
        """The kept controls when the file changed since the last load (a stat otherwise: a
        poller may have written it); None when it didn't, or there is none, or it can't be read."""
        with self._lock:
            try:
                stat = os.stat(self.path)
            except OSError:
                return None
            if (stat.st_ino, stat.st_mtime_ns, stat.st_size) == self._seen:
                return None
            return self._load()

    def _load(self) -> tuple[Control, ...] | None:
        try:
            stat = os.stat(self.path)
            self._seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            controls, text = _read(self.path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as err:  # JSON and UTF-8 errors are ValueErrors
            self._trouble("read", err)
            return None
        self._saved = text
        return controls

    def save(self, controls: tuple[Control, ...]) -> None:
        """Keeps ``controls`` unless the file already holds them."""
        with self._lock:
            self._save(controls)

    def _save(self, controls: tuple[Control, ...]) -> None:
        text = encode(controls)
        if text == self._saved or (not controls and self._saved is None and not self.path.exists()):
            return  # what the file says already (no file: no controls)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=f".{FILE_NAME}.", dir=self.path.parent)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as file:
                    file.write(text)
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as err:
            self._trouble("write", err)
            return
        self._saved, self._failing = text, False

    def _trouble(self, operation: str, err: Exception) -> None:
        FAILURES.labels(operation).inc()
        if self._failing:
            return
        self._failing = True
        logger.warning(
            "Craft apps release controls: %s can't be %s (%s); a web process started while the "
            "database can't be read serves without the controls until it can",
            self.path,
            "read" if operation == "read" else "written",
            _reason(err),
        )
