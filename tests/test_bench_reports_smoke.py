"""``python -m bench.reports`` at a tiny size, so it never rots; the real figures come from its
default sizes (docs/benchmarks.md). Only sanity is checked here: speed is measured, not asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ONE_AT_A_TIME

ROOT = Path(__file__).resolve().parent.parent
TINY = [
    "--seconds", "1", "--connections", "4", "--workers", "1", "--senders", "2", "--reports", "200",
    "--steady-rate", "20", "--flood", "600", "--flood-installs", "60", "--loadgen", "python",
]  # fmt: skip


@pytest.mark.slow
@ONE_AT_A_TIME
def test_the_reports_benchmark_runs_at_a_tiny_size_with_sane_figures(tmp_path: Path) -> None:
    figures_file = tmp_path / "figures.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    done = subprocess.run(
        [sys.executable, "-m", "bench.reports", *TINY, "--json", str(figures_file)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(figures_file.read_text())["figures"]
    assert figures["accepted_per_s"] > 0 and figures["counted_within_s"] is not None
    assert figures["cpu_ms_per_report"] > 0 and figures["steady_sent"] > 0
    assert figures["counted"] >= 200 * 0.95, "the writers counted every new install (HyperLogLog: ~1 %)"
    assert figures["release_keys"] >= 3 and figures["mark_bytes_per_install"] > 0
    assert (
        figures["ours"]["requests"] > 0 and figures["bare"]["requests"] > 0 and figures["ratio_to_bare"] > 0
    )
    assert figures["flood_sent"] == {"202": 600}, "a forged flood is answered, never refused or failed"
    assert figures["not_counted"].get("address_rate", 0) > 0, "one address's flood is bounded and counted"
    assert figures["rss_kib_before"] > 0 and figures["rss_kib_after"] > 0
    assert figures["flood_pairs"] >= 1 and figures["bare_during_flood"]["requests"] > 0
    assert figures["flood_ratio_to_bare"] > 0
    cpu, share = figures["refused_cpu_us"], figures["refused_share"]
    assert cpu["address_rate"] > 0 and cpu["install_rate"] > 0 and cpu["bare"] > 0, cpu
    assert share["address_rate"] > 0 and share["install_rate"] > 0, "each limit refused some"
