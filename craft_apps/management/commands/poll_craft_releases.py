"""``python manage.py poll_craft_releases``: keeps this host's release state fresh until stopped.

The first SIGTERM or SIGINT lets the request in flight finish (for at most 1.5 s) and exits 0; a
second exits 130 at once (``polling.stopping``). ``--once`` runs one round without the start-up
delay and exits; on a terminal it shows the round's progress (``Polling GitHub: 3/13 apps``) on
stderr. Configuration errors stop it with a message naming the setting, before anything else
happens.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from craft_apps import __version__
from craft_apps.cdn.wiring import purger_from_settings
from craft_apps.checks import configuration_problems
from craft_apps.conf import app_settings, describe
from craft_apps.content.channels import HistoryApps
from craft_apps.github.client import GitHubClient
from craft_apps.polling.process import EXIT_OK, PollerRunner, RunnerOptions
from craft_apps.polling.stopping import StopOnSignals
from craft_apps.polling.tally import EXIT_STALE

logger = logging.getLogger("craft_apps")

_LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG, 3: logging.DEBUG}


class Command(BaseCommand):
    help = "Polls GitHub for the latest release of every Craft App and publishes it to this host."

    def get_version(self) -> str:
        # ``--version`` names this app's release, not Django's.
        return __version__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--once", action="store_true", help="Run one round now (no start-up delay) and exit."
        )
        parser.add_argument(
            "--no-startup-delay",
            action="store_true",
            help="Start the first round at once instead of after a random 0-30 s "
            "(the delay spreads a fleet deploy; a single host doesn't need it).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        _configure_logging(int(options.get("verbosity", 1)))
        problems = configuration_problems()  # once: it probes the state directory
        errors = [problem for problem in problems if problem.is_error]
        for problem in problems:
            if not problem.is_error:
                logger.warning("%s %s %s", problem.id, problem.msg, problem.hint)
        if errors:
            raise CommandError("; ".join(f"{problem.id} {problem.msg} {problem.hint}" for problem in errors))
        if not app_settings.POLLING_ENABLED:
            logger.info("Craft app release polling is disabled (%s); exiting.", describe("POLLING_ENABLED"))
            return
        progress = self._progress() if options["once"] else None
        runner = PollerRunner(
            make_source=GitHubClient.from_settings,
            # The apps on beta or with a release control need GitHub's release list (their history).
            needs_history=HistoryApps(),
            options=RunnerOptions(
                once=bool(options["once"]), startup_delay=not options["no_startup_delay"], progress=progress
            ),
        )
        # The CDN purge (docs/cdn.md): a thread of its own, acting while this process holds the lease.
        purger = None if options["once"] else purger_from_settings(lambda: _holds_lease(runner))
        if purger is not None:
            purger.start()
        try:
            with StopOnSignals(runner):
                status = runner.run()
        finally:
            if purger is not None:
                purger.stop()
            if progress is not None:
                progress.finish()
        if status == EXIT_STALE:
            raise CommandError(
                "some apps are out of date after failed requests; see above.", returncode=status
            )
        if status != EXIT_OK:
            raise CommandError(f"the poller stopped with status {status}; see the log above.")

    def _progress(self) -> RoundProgress | None:
        """The round's progress on stderr when it is a terminal."""

        def write(text: str) -> None:
            self.stderr.write(text, style_func=_plain, ending="")  # not in the error style
            self.stderr.flush()

        return progress_on(self.stderr, write)


def _plain(text: str) -> str:
    return text


def _holds_lease(runner: PollerRunner) -> bool:
    lease = runner.lease
    return lease is not None and lease.is_held()


def _configure_logging(verbosity: int) -> None:
    """Verbosity 0-3 to levels; at 3 every library logs at debug too."""
    level = _LEVELS.get(verbosity, logging.DEBUG)
    logger.setLevel(level)
    if verbosity >= 3:
        logging.getLogger().setLevel(logging.DEBUG)
    if not logging.getLogger().handlers and not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)


class RoundProgress:
    """Writes ``Polling GitHub: <done>/<due> apps`` over itself, ending the line at the last app."""

    def __init__(self, write: Callable[[str], object]) -> None:
        self._write = write
        self._open = False  # a line was started and not ended

    def __call__(self, done: int, due: int) -> None:
        self._open = done < due
        self._write(f"\rPolling GitHub: {done}/{due} apps" + ("" if self._open else "\n"))

    def finish(self) -> None:
        """Ends the line when the round stopped before its last app."""
        if self._open:
            self._open = False
            self._write("\n")


def progress_on(stream: object, write: Callable[[str], object]) -> RoundProgress | None:
    """Progress written with ``write`` when ``stream`` is a terminal (its ``isatty()`` says so);
    None otherwise."""
    isatty = getattr(stream, "isatty", None)
    if not callable(isatty) or not isatty():
        return None
    return RoundProgress(write)
