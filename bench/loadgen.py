"""HTTP load: wrk when it is installed, else a small built-in Python generator.

Both hold ``connections`` connections busy for ``seconds`` and report requests per second, the
50th and 99th percentile and the largest latency, and errors (socket errors and answers other
than 2xx/3xx). The Python generator exists so that CI, which installs neither wrk nor nginx,
still runs the endpoint benchmark's code: its figures measure the generator as much as the
server (one process, one GIL) and are labelled with the tool that made them.
"""

from __future__ import annotations

import http.client
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from bench.stats import percentile

_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}
_DURATION = r"([0-9.]+)(us|ms|s|m)\b"


@dataclass
class LoadResult:
    tool: str
    connections: int
    seconds: float
    requests: int
    rps: float
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    errors: int


def merge_results(parts: list[LoadResult]) -> LoadResult:
    """One result from several runs on the same target: requests and errors add up, requests per
    second over the whole time; percentiles can't be merged, so the median of the runs' p50 and
    p99 stands for them, and the largest maximum."""

    def median(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return percentile(known, 0.5) if known else None

    seconds = sum(p.seconds for p in parts)
    requests = sum(p.requests for p in parts)
    maxima = [p.max_ms for p in parts if p.max_ms is not None]
    return LoadResult(
        tool=parts[0].tool,
        connections=parts[0].connections,
        seconds=seconds,
        requests=requests,
        rps=sum(p.rps * p.seconds for p in parts) / seconds if seconds else 0.0,
        p50_ms=median([p.p50_ms for p in parts]),
        p99_ms=median([p.p99_ms for p in parts]),
        max_ms=max(maxima) if maxima else None,
        errors=sum(p.errors for p in parts),
    )


def wrk_available() -> bool:
    return shutil.which("wrk") is not None


def run_load(
    url: str, *, connections: int, seconds: float, tool: str, headers: dict[str, str] | None = None
) -> LoadResult:
    """Load on ``url``, every request with ``headers``."""
    if tool == "wrk":
        return run_wrk(url, connections=connections, seconds=seconds, headers=headers)
    if tool == "python":
        return python_load(url, connections=connections, seconds=seconds, headers=headers)
    raise ValueError(f"unknown load generator {tool!r}")


def run_wrk(
    url: str, *, connections: int, seconds: float, threads: int = 2, headers: dict[str, str] | None = None
) -> LoadResult:
    command = [
        "wrk",
        f"-t{min(threads, connections)}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--latency",
        *(option for name, value in (headers or {}).items() for option in ("-H", f"{name}: {value}")),
        url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    return parse_wrk(done.stdout, connections=connections, seconds=seconds)


def _ms(match: re.Match[str], group: int) -> float:
    """The duration in groups ``group`` (number) and ``group + 1`` (unit), in milliseconds."""
    return float(match.group(group)) * _UNITS_MS[match.group(group + 1)]


def parse_wrk(output: str, *, connections: int, seconds: float) -> LoadResult:
    """Reads ``wrk --latency`` output; raises ValueError when a figure is missing."""

    def find(pattern: str) -> re.Match[str]:
        match = re.search(pattern, output, re.MULTILINE)
        if match is None:
            raise ValueError(f"wrk output without {pattern!r}:\n{output}")
        return match

    latency = find(rf"^\s*Latency\s+{_DURATION}\s+\S+\s+{_DURATION}")
    requests = int(find(r"^\s*(\d+) requests in ").group(1))
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    errors = (sum(int(n) for n in socket_errors.groups()) if socket_errors else 0) + (
        int(non_2xx.group(1)) if non_2xx else 0
    )
    return LoadResult(
        tool="wrk",
        connections=connections,
        seconds=seconds,
        requests=requests,
        rps=float(find(r"^Requests/sec:\s+([0-9.]+)").group(1)),
        p50_ms=_ms(find(rf"^\s*50%\s+{_DURATION}"), 1),
        p99_ms=_ms(find(rf"^\s*99%\s+{_DURATION}"), 1),
        max_ms=_ms(latency, 3),
        errors=errors,
    )


def python_load(
    url: str, *, connections: int, seconds: float, headers: dict[str, str] | None = None
) -> LoadResult:
    """``connections`` threads, each sending GETs back to back on a keep-alive connection."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    latencies: list[list[float]] = [[] for _ in range(connections)]
    errors = [0] * connections
    start = time.perf_counter()
    deadline = start + seconds

    def worker(slot: int) -> None:
        connection: http.client.HTTPConnection | None = None
        while time.perf_counter() < deadline:
            if connection is None:
                connection = http.client.HTTPConnection(host, port, timeout=5)
            sent = time.perf_counter()
            try:
                connection.request("GET", path, headers=headers or {})
                response = connection.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                errors[slot] += 1
                connection.close()
                connection = None
                continue
            latencies[slot].append((time.perf_counter() - sent) * 1000)
            if not 200 <= response.status < 400:
                errors[slot] += 1
            if response.will_close:
                connection.close()
                connection = None
        if connection is not None:
            connection.close()

    threads = [threading.Thread(target=worker, args=(slot,), daemon=True) for slot in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 30)
    elapsed = time.perf_counter() - start
    every = [value for slot in latencies for value in slot]
    return LoadResult(
        tool="python",
        connections=connections,
        seconds=seconds,
        requests=len(every),
        rps=len(every) / elapsed if elapsed > 0 else 0.0,
        p50_ms=percentile(every, 0.50),
        p99_ms=percentile(every, 0.99),
        max_ms=max(every) if every else None,
        errors=sum(errors),
    )
