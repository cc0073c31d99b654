"""The endpoint tests' site: two apps, a state directory of the test's own, a look at the state
file on every request, the best brotli form made at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from craft_apps.api import views
from craft_apps.api.representation import Refiner
from tests.support import apps_setting


@pytest.fixture
def site(state_dir: Path, settings, monkeypatch):
    settings.CRAFT_APPS = {"APPS": apps_setting(), "STATE_DIR": str(state_dir)}
    monkeypatch.setattr(views.answers, "recheck_s", 0.0)  # look at the state file on every request
    # The best brotli form is made before the request returns: the same bytes for every request.
    monkeypatch.setattr(views.answers, "_refiner", Refiner(start=lambda job: job(), after_s=0.0))
    views.answers.clear()
    yield state_dir
    views.answers.clear()
