"""The endpoint tests' site: two apps, a state directory of the test's own, and a web runtime of
the test's own that looks at the state file on every request and makes the best brotli form at
once."""

from __future__ import annotations

from pathlib import Path

import pytest

from craft_apps.api.representation import Refiner

URL = "/v1/craft_apps/release_info"
TWO_APPS = (
    "photocraft=PhotoCraft=storytold/photocraft,artcraft-launcher=ArtCraft Launcher=storytold/craft-launcher"
)


@pytest.fixture
def site(state_dir: Path, settings, install_runtime) -> Path:
    settings.CRAFT_APPS = {"APPS": TWO_APPS, "STATE_DIR": str(state_dir)}
    # The state file on every request; the best brotli form made before the request returns:
    # the same bytes for every request.
    install_runtime(recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0))
    return state_dir
