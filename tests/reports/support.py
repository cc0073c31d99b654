"""Helpers of the reports' tests: a report's body, the settings, a counter's value."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from django.test import override_settings
from prometheus_client import Counter

from craft_apps.fleet.options import poller_cache

URL = "/v1/craft_apps/reports"
APPS = "photocraft=PhotoCraft=storytold/photocraft,vectorcraft=VectorCraft=storytold/vectorcraft"
LOCAL = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}


def body(**fields: Any) -> bytes:
    report: dict[str, Any] = {
        "app_key": "photocraft",
        "install_id": str(uuid.uuid4()),
        "version": "0.6.0",
        "previous_version": "0.5.0",
        "outcome": "installed",
        "channel": "stable",
        "os": "windows",
        "arch": "x64",
    }
    report.update(fields)
    return json.dumps({k: v for k, v in report.items() if v is not ...}).encode()


def reports_settings(state_dir: Path, redis_url: str | None = None) -> Any:
    caches: dict[str, Any] = {"default": LOCAL}
    if redis_url is not None:
        caches["craft_apps"] = poller_cache(redis_url)
    return override_settings(CRAFT_APPS={"STATE_DIR": str(state_dir), "APPS": APPS}, CACHES=caches)


def value(counter: Counter, **labels: str) -> float:
    """A counter's value for ``labels`` (0 when never counted)."""
    for metric in counter.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total") and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0
