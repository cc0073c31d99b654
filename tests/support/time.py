"""Durations in the milliseconds the clocks and the stored state count in."""

from __future__ import annotations

S = 1000  # one second, in milliseconds
