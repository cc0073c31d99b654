"""What the endpoint's tests share: ``warm`` publishes both apps fetched, ``decoded`` undoes a
response's coding, ``exchange`` is one raw request to a real server with what it cost on the
wire, and ``scrape`` reads the metrics endpoint back as samples."""

from __future__ import annotations

import gzip
import socket
from dataclasses import dataclass
from pathlib import Path

import brotli
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from bench.endpoint import ENDPOINT_PATH
from bench.launcher import SERVER_HEADERS
from craft_apps.kernel.domain import AppState
from tests.support import publish, release

T0 = 1_790_000_000_000
SERVER_HEADER_NAMES = {name.lower() for name, _ in SERVER_HEADERS}
METRICS_URL = "/v1/craft_apps/metrics"
TOKEN = "s3cret-metrics-token-0123456789"


def warm(state_dir: Path, *, version: str = "0.5.0", fetched_ms: int = T0) -> None:
    """Both apps fetched at ``fetched_ms``; photocraft at ``version``."""
    publish(
        state_dir,
        {
            "photocraft": AppState(latest_release=release(version), fetched_ms=fetched_ms),
            "artcraft-launcher": AppState(latest_release=None, fetched_ms=fetched_ms + 7),
        },
    )


def decoded(response) -> bytes:
    content = bytes(response.content)
    coding = response.get("Content-Encoding")
    if coding == "br":
        return bytes(brotli.decompress(content))
    if coding == "gzip":
        return gzip.decompress(content)
    assert coding is None, coding
    return content


@dataclass(frozen=True)
class Exchange:
    sent: int
    received: int
    status: int
    headers: dict[str, str]  # lowercased names, the application's and the server's
    body: bytes

    def app_headers(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.headers.items() if k not in SERVER_HEADER_NAMES]


def exchange(port: int, headers: list[tuple[str, str]], method: str = "GET") -> Exchange:
    """One request on a fresh connection, read until the server closes it."""
    lines = [f"{method} /{ENDPOINT_PATH} HTTP/1.1", *(f"{k}: {v}" for k, v in headers)]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    raw = b"".join(chunks)
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    return Exchange(len(request), len(raw), int(status_line.split()[1]), parsed, body)


def scrape(client: Client) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Every sample, by sample name and labels."""
    response = client.get(METRICS_URL, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    assert response["Cache-Control"] == "no-store"
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples
