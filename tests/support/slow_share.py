"""Which slow tests a ``--slow-share K/N`` run leaves out: the matrix's end pairs share them."""

from __future__ import annotations

from collections.abc import Iterable

import pytest


def parse_share(text: str) -> tuple[int, int]:
    """Read ``"1/2"`` as (1, 2); a bad value stops the run with one line."""
    wanted, _, shares = text.partition("/")
    if not (wanted.isdigit() and shares.isdigit() and 1 <= int(wanted) <= int(shares)):
        raise pytest.UsageError(f"--slow-share takes K/N with 1 <= K <= N, not {text!r}")
    return int(wanted), int(shares)


def outside_share(slow: Iterable[str], wanted: int, shares: int) -> set[str]:
    """Return the slow test ids outside share ``wanted`` of ``shares``.

    Every N-th test by sorted id, so the long tests of one file fall in different shares and
    the order pytest-randomly gives changes nothing.
    """
    ordered = sorted(set(slow))
    return {nodeid for index, nodeid in enumerate(ordered) if index % shares != wanted - 1}
