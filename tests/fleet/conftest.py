"""The fleet tests' GitHub stand-in: every default app with its demo release 0.5.0 (a module
that needs other releases has its own ``github``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from craft_apps.conf import DEFAULT_APPS
from craft_apps.testing.fake_github import FakeGitHub
from tests.support import stand_in


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with stand_in(DEFAULT_APPS) as server:
        yield server
