"""Small, exact statistics for benchmark figures."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile (``fraction`` in [0, 1]); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return float(ordered[min(rank, len(ordered)) - 1])


def max_in_window(times: Sequence[int], window: int) -> int:
    """The most ``times`` that fall in any half-open window ``[t, t + window)``."""
    ordered = sorted(times)
    best = 0
    start = 0
    for end, time in enumerate(ordered):
        while ordered[start] <= time - window:
            start += 1
        best = max(best, end - start + 1)
    return best
