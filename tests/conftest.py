"""Fixtures every test may use. Area-specific fixtures live beside their tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from craft_apps.testing.clock import FakeClock


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """A fresh, not yet created state directory (file-backed, never :memory:)."""
    return tmp_path / "state"
