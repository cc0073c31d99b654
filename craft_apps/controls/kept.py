"""The release controls a web process last read, kept in the state directory for the next one.

So a worker started while the database is down still applies the yanks, holds and rollouts.
The file (the release policies too, under a key of their own) is rewritten whole when it
differs; a file that isn't one is refused, with one line and a count. See docs/controls.md.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import Counter

from craft_apps.controls.rules import POLICY_ACTIONS, Control, as_data, from_data
from craft_apps.kernel.text import one_line

logger = logging.getLogger("craft_apps.content.kept_controls")  # the name operators filter on

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
    """The text of ``controls``; release policies and approvals (``policies``) under a key of
    their own, which a version before them ignores rather than refusing the whole file."""
    rows = [as_data(control) for control in controls if control.action not in POLICY_ACTIONS]
    document: dict[str, object] = {"v": FORMAT_VERSION, "controls": rows}
    policies = [as_data(control) for control in controls if control.action in POLICY_ACTIONS]
    if policies:
        document["policies"] = policies
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def decode(text: str) -> tuple[Control, ...]:
    """The controls ``text`` holds. Raises ValueError for anything else."""
    document = json.loads(text)
    if not isinstance(document, dict) or document.get("v") != FORMAT_VERSION:
        raise ValueError(f"not format {FORMAT_VERSION}")
    rows, policies = document.get("controls"), document.get("policies", [])
    if not isinstance(rows, list) or not isinstance(policies, list):
        raise ValueError("no list of controls")
    read = tuple(from_data(row) for row in rows)
    if any(control.action in POLICY_ACTIONS for control in read):
        raise ValueError("a release policy among the controls")
    kept = tuple(from_data(row) for row in policies)
    if any(control.action not in POLICY_ACTIONS for control in kept):
        raise ValueError("a control among the release policies")
    return read + kept


def _read(path: Path) -> tuple[tuple[Control, ...], str]:
    """The controls the file at ``path`` holds, and its text. Opens without blocking and refuses
    anything but a regular file, so a FIFO or a device there can't hang the reader. Raises
    FileNotFoundError, another OSError, or ValueError for a file that isn't ours."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"not a regular file ({_kind(mode)})")
        raw = os.read(descriptor, MAX_BYTES + 1)
    finally:
        os.close(descriptor)
    if len(raw) > MAX_BYTES:
        raise ValueError(f"over {MAX_BYTES} bytes")
    text = raw.decode("utf-8")
    return decode(text), text


def _kind(mode: int) -> str:
    kinds = {stat.S_ISDIR: "a directory", stat.S_ISFIFO: "a FIFO", stat.S_ISSOCK: "a socket"}
    return next((name for test, name in kinds.items() if test(mode)), "a device or other special file")


def _identity(path: Path) -> tuple[int, int, int] | None:
    """What tells one version of the file from another without opening it; None: no file."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns, found.st_size


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
    one line logged when it starts (and again after a success). ``changed`` only stats the
    file, so a request may ask it; the reads and writes run in the background."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE_NAME
        self._failing = False
        self._saved: str | None = None  # the text the file holds, as we last read or wrote it
        self._known: tuple[int, int, int] | None = None  # the file's identity when it held that
        self._seen: tuple[int, int, int] | None = None  # the file's identity at the last load
        self._refused: tuple[int, int, int] | None = None  # the last one refused: counted once
        self._lock = threading.Lock()  # the beat's load and the look's save

    def changed(self) -> bool:
        """Whether the file is another than at the last load (one stat, no open)."""
        found = _identity(self.path)
        return found is not None and found != self._seen

    def load_changed(self) -> tuple[Control, ...] | None:
        """The kept controls when the file changed since the last load (a stat otherwise: a
        poller may have written it); None when it didn't, or there is none, or it can't be read."""
        with self._lock:
            found = _identity(self.path)
            if found is None or found == self._seen:
                return None
            self._seen = found
            try:
                controls, text = _read(self.path)
            except FileNotFoundError:
                return None
            except (OSError, ValueError) as err:  # JSON and UTF-8 errors are ValueErrors
                self._refuse(found, err)
                return None
            self._saved, self._known = text, found
            return controls

    def save(self, controls: tuple[Control, ...]) -> None:
        """Keeps ``controls`` unless the file already holds them: a file changed or damaged
        since we last wrote it is read again, and rewritten when it holds anything else."""
        with self._lock:
            text = encode(controls)
            found = _identity(self.path)
            if found is None and not controls and self._saved is None:
                return  # no file: no controls
            if found is not None and found != self._known:
                self._compare(found)
            if text == self._saved and found is not None and found == self._known:
                return
            self._write(text)

    def _compare(self, found: tuple[int, int, int]) -> None:
        """Reads what the file holds now, so ``save`` knows whether to rewrite it."""
        on_disk = None  # gone, damaged or not ours: rewritten
        try:
            _, on_disk = _read(self.path)
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as err:
            self._refuse(found, err)
        self._saved, self._known = (on_disk, found) if on_disk is not None else (None, None)

    def _write(self, text: str) -> None:
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
        self._saved, self._known, self._failing = text, _identity(self.path), False

    def _refuse(self, found: tuple[int, int, int], err: Exception) -> None:
        """Counts and logs a file refused, once for each version of it."""
        if found != self._refused:
            self._refused = found
            self._trouble("read", err)

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
