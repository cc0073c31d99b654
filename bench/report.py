"""What every benchmark shares: a Redis to run against, Markdown tables, JSON output, the machine.

``rewrite_figures`` replaces only the part of docs/benchmarks.md between the two marker lines,
so the hand-written text around the figures survives every run; a file without both markers is
refused rather than overwritten.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.fleet.server import RedisServer

FIGURES_START = "<!-- figures: start (written by bash .ci/bench; edits here are lost) -->"
FIGURES_END = "<!-- figures: end -->"


@contextmanager
def start_redis(directory: Path) -> Iterator[RedisServer]:
    """A private redis-server on a free port, without persistence, stopped on exit."""
    server = RedisServer.start(directory)
    try:
        yield server
    finally:
        server.stop()


class WarningCounter(logging.Handler):
    """Counts WARNING and worse log records by logger while in use (a run's health at a glance)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[f"{record.levelname.lower()} {record.name}"] += 1

    def __enter__(self) -> WarningCounter:
        logging.getLogger().addHandler(self)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        logging.getLogger().removeHandler(self)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(row) for row in rows)])


def json_output(path: Path, figures: dict[str, Any], markdown: str) -> None:
    path.write_text(json.dumps({"figures": figures, "markdown": markdown}, indent=2, default=str) + "\n")


def finish(report: Any, text: str, json_path: Path | None) -> int:
    """A benchmark command's ending: the figures on stdout, and as JSON when asked."""
    print(text)
    if json_path:
        json_output(json_path, asdict(report), text)
    return 0


def read_json_output(path: Path) -> tuple[dict[str, Any], str]:
    data = json.loads(path.read_text())
    return data["figures"], data["markdown"]


def _first_line(command: list[str]) -> str:
    if shutil.which(command[0]) is None:
        return "not installed"
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        return f"unknown ({type(err).__name__})"
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0] if text else "unknown"


def machine() -> list[tuple[str, str]]:
    """The machine the figures come from, as (what, value) rows."""
    cpuinfo = _read("/proc/cpuinfo")
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    memory = re.search(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), re.MULTILINE)
    os_name = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', _read("/etc/os-release"), re.MULTILINE)
    import django
    import gunicorn  # type: ignore[import-untyped]

    return [
        ("cores (nproc)", str(os.cpu_count() or "unknown")),
        ("CPU", model.group(1).strip() if model else platform.processor() or "unknown"),
        ("memory", f"{int(memory.group(1)) / 1024 / 1024:.1f} GiB" if memory else "unknown"),
        ("OS", os_name.group(1) if os_name else platform.platform()),
        ("kernel", platform.release()),
        ("Python", platform.python_version()),
        ("Django, gunicorn", f"{django.get_version()}, {gunicorn.__version__}"),
        ("Redis", _first_line(["redis-server", "--version"])),
        ("wrk", _first_line(["wrk", "--version"])),
        ("nginx", _first_line(["nginx", "-v"])),
    ]


def machine_line(rows: list[tuple[str, str]]) -> str:
    """Return the machine's rows as one line, each tool by its version number alone."""
    shown = dict(rows)
    tools = ", ".join(
        f"{name} {_version(shown[name])}" for name in ("Python", "Redis", "wrk", "nginx") if name in shown
    )
    django, _, gunicorn = shown.get("Django, gunicorn", "").partition(", ")
    load = shown.get("load average before the run (1, 5, 15 min)")
    return (
        f"{shown.get('cores (nproc)', '?')} cores ({shown.get('CPU', '?')}), {shown.get('memory', '?')}, "
        f"{shown.get('OS', '?')}, {tools}, Django {django}, gunicorn {gunicorn}"
        + (f"; load average {load} before the run" if load else "")
    )


def _version(text: str) -> str:
    found = re.search(r"\d+\.\d+(?:\.\d+)?", text)
    return found.group(0) if found else text


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def rewrite_figures(doc: Path, figures_markdown: str) -> None:
    """Puts ``figures_markdown`` between the markers of ``doc``."""
    text = doc.read_text()
    start = text.find(FIGURES_START)
    end = text.find(FIGURES_END)
    if start < 0 or end < start:
        raise ValueError(f"{doc} lacks the figure markers {FIGURES_START!r} ... {FIGURES_END!r}")
    head = text[: start + len(FIGURES_START)]
    doc.write_text(f"{head}\n\n{figures_markdown.strip()}\n\n{text[end:]}")
