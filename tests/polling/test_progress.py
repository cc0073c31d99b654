"""``poll_craft_releases --once`` shows the round's progress on a terminal (``Polling GitHub:
1/2 apps``, rewritten in place) and writes nothing of it when its stderr is not a terminal."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from craft_apps.kernel.domain import AppSpec
from craft_apps.management.commands.poll_craft_releases import RoundProgress, progress_on
from tests.support import TWO_APPS, apps_setting, stand_in


@pytest.fixture(autouse=True)
def log_levels_kept() -> Iterator[None]:
    """Give back the log levels and handlers the command sets, so later tests' caplog sees DEBUG."""
    loggers = [logging.getLogger(), logging.getLogger("craft_apps")]
    kept = [(each, each.level, list(each.handlers)) for each in loggers]
    yield
    for each, level, handlers in kept:
        each.setLevel(level)
        each.handlers[:] = handlers


class Stream(io.StringIO):
    """A stream that says it is a terminal, or not."""

    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


def test_on_a_terminal_the_line_is_rewritten_and_ended_at_the_last_app() -> None:
    stream = Stream(terminal=True)
    progress = progress_on(stream, stream.write)
    assert progress is not None
    for done in (1, 2, 3):
        progress(done, 3)
    progress.finish()
    assert stream.getvalue() == (
        "\rPolling GitHub: 1/3 apps\rPolling GitHub: 2/3 apps\rPolling GitHub: 3/3 apps\n"
    )


def test_a_round_that_stops_early_still_ends_its_line() -> None:
    written: list[str] = []
    progress = RoundProgress(written.append)
    progress(1, 13)
    progress.finish()
    progress.finish()
    assert "".join(written) == "\rPolling GitHub: 1/13 apps\n"


def test_off_a_terminal_there_is_no_progress() -> None:
    stream = Stream(terminal=False)
    assert progress_on(stream, stream.write) is None
    assert progress_on(object(), print) is None  # a stream that can't tell is not a terminal


def poll_once(settings, state_dir: Path, stderr: Stream, apps: tuple[AppSpec, ...] = TWO_APPS) -> None:
    with stand_in(apps) as github:
        settings.CRAFT_APPS = {
            "APPS": apps_setting(apps),
            "STATE_DIR": str(state_dir),
            "GITHUB_API_URL": github.url,
            "GITHUB_WEB_URL": github.url,
        }
        call_command("poll_craft_releases", "--once", stdout=io.StringIO(), stderr=stderr)
        assert all(github.requests_for(app.repo) for app in apps)


@pytest.mark.django_db
def test_once_on_a_terminal_shows_each_app_asked(settings, state_dir: Path) -> None:
    stderr = Stream(terminal=True)
    poll_once(settings, state_dir, stderr)
    assert stderr.getvalue() == "\rPolling GitHub: 1/2 apps\rPolling GitHub: 2/2 apps\n"


@pytest.mark.django_db
def test_once_off_a_terminal_writes_no_progress(settings, state_dir: Path) -> None:
    stderr = Stream(terminal=False)
    poll_once(settings, state_dir, stderr, apps=TWO_APPS[:1])
    assert "Polling GitHub:" not in stderr.getvalue()
