"""Runs the test matrix of noxfile.py pair by pair, then prints each pair's result and time.

    python .ci/matrix.py [--pair 3.12-6.0 ...] [pytest arguments ...]

Without ``--pair`` every supported pair runs. Each pair's output is shown as it comes and kept in
``.nox/logs/<pair>.log``. The last line adds up the tests of every pair (``matrix: N passed,
M failed``); the exit status is 1 when any pair failed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CI_LIMIT_S = 90 * 60
# pytest's closing line, e.g. "2 failed, 714 passed, 1 error in 98.21s (0:01:38)".
SUMMARY = re.compile(r"^=*\s*(?P<counts>\d+ [a-z]+(?:, \d+ [a-z]+)*) in [\d.]+s")


@dataclass
class Outcome:
    pair: str
    status: int
    seconds: float
    counts: dict[str, int]

    @property
    def result(self) -> str:
        if not self.counts:
            return "did not run the tests (see its log)" if self.status else "no tests"
        text = ", ".join(f"{n} {kind}" for kind, n in self.counts.items())
        return text if self.status == 0 else f"FAILED: {text}"


def split_arguments(argv: list[str]) -> tuple[list[str], list[str]]:
    """The ``--pair`` values, and everything else (for pytest)."""
    pairs: list[str] = []
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--pair":
            pairs.append(next(args, ""))
        elif arg.startswith("--pair="):
            pairs.append(arg.removeprefix("--pair="))
        else:
            rest.append(arg)
    return pairs, rest


def counts_of(output: str) -> dict[str, int]:
    lines = [match for line in output.splitlines() if (match := SUMMARY.match(line.strip()))]
    if not lines:
        return {}
    counts: dict[str, int] = {}
    for part in lines[-1]["counts"].split(", "):
        number, kind = part.split(" ", 1)
        counts[kind] = int(number)
    return counts


def run_pair(pair: str, pytest_args: list[str]) -> Outcome:
    log = ROOT / ".nox" / "logs" / f"{pair}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    command = [sys.executable, "-m", "nox", "-s", f"tests({pair})", "--", *pytest_args]
    with (
        log.open("w") as kept,
        subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        ) as process,
    ):
        assert process.stdout is not None
        output = []
        for line in process.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            kept.write(line)
            output.append(line)
        status = process.wait()
    return Outcome(pair, status, time.monotonic() - started, counts_of("".join(output)))


def duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def table(outcomes: list[Outcome]) -> str:
    rows = ["| Python | Django | result | time |", "|---|---|---|---|"]
    for outcome in outcomes:
        python, django = outcome.pair.split("-")
        rows.append(f"| {python} | {django} | {outcome.result} | {duration(outcome.seconds)} |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    from noxfile import PAIRS

    supported = [f"{python}-{django}" for python, django in PAIRS]
    pairs, pytest_args = split_arguments(argv)
    unknown = [pair for pair in pairs if pair not in supported]
    if unknown:
        print(f"Unknown pair {', '.join(unknown)}; the pairs are: {' '.join(supported)}", file=sys.stderr)
        return 2
    started = time.monotonic()
    outcomes = []
    for pair in pairs or supported:
        print(f"== Python {pair.replace('-', ', Django ')}", flush=True)
        outcomes.append(run_pair(pair, pytest_args))
    total = time.monotonic() - started
    passed = sum(outcome.counts.get("passed", 0) for outcome in outcomes)
    failed = sum(
        outcome.counts.get(kind, 0) for outcome in outcomes for kind in ("failed", "error", "errors")
    )
    failed += sum(1 for outcome in outcomes if outcome.status and not outcome.counts)  # no test ran
    print("== matrix")
    print(table(outcomes))
    pairs_run = f"{len(outcomes)} pair{'s' if len(outcomes) != 1 else ''}"
    print(f"total: {duration(total)} for {pairs_run} (CI's limit: {duration(CI_LIMIT_S)})")
    print(f"matrix: {passed} passed, {failed} failed")
    return 1 if any(outcome.status for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
