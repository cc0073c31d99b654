"""The endpoint tests' site: two apps, a state directory of the test's own, and a web runtime of
the test's own that looks at the state file on every request and makes the best brotli form at
once."""

from __future__ import annotations

from pathlib import Path

import pytest

from craft_apps.api.representation import Refiner
from tests.support import apps_setting


@pytest.fixture
def site(state_dir: Path, settings, install_runtime) -> Path:
    settings.CRAFT_APPS = {"APPS": apps_setting(), "STATE_DIR": str(state_dir)}
    # The state file on every request; the best brotli form made before the request returns:
    # the same bytes for every request.
    install_runtime(recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0))
    return state_dir
