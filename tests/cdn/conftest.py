"""The origin every CDN test puts a proxy in front of: gunicorn on the site's state directory,
photocraft not fetched yet (``warm`` fetches it); and Varnish in front of it, as shipped."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from craft_apps.kernel.domain import AppState
from tests.cdn.support import Origin, Varnish
from tests.content.workers_support import database_for_the_workers
from tests.controls.support import site_env
from tests.support import publish


@pytest.fixture
def origin(tmp_path: Path) -> Iterator[Origin]:
    state_dir = tmp_path / "state"
    publish(state_dir, {"photocraft": AppState(fetched_ms=None)})
    with database_for_the_workers() as (database, _):
        running = Origin(tmp_path, site_env(state_dir, database))
        try:
            yield running
        finally:
            running.stop()


@pytest.fixture
def varnish(origin: Origin, tmp_path: Path) -> Iterator[Varnish]:
    running = Varnish(tmp_path, origin.port)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ``CRAFT_APPS_*`` variable but a state directory of the test's own: settings tests."""
    for name in list(os.environ):
        if name.startswith("CRAFT_APPS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CRAFT_APPS_STATE_DIR", str(tmp_path / "state"))
