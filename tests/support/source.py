"""A copy of the source tree to build the package from, without what a clone's use leaves behind.

Building in the clone itself would reuse its ``build/lib``, where a module removed since the last
build still sits and goes into the wheel.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_COPIED = shutil.ignore_patterns(
    ".git", ".venv*", ".nox", "var", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
)


def copy_of_the_source(destination: Path) -> Path:
    """The repository's files at ``destination`` (which must not exist yet), as a clone has them."""
    shutil.copytree(ROOT, destination, ignore=NOT_COPIED)
    return destination
