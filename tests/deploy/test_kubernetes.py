"""The Kubernetes example: valid against Kubernetes' own schema (kubernetes-validate ships the
schemas, so this runs offline), one pod = one host, and its probes' commands and paths work."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import kubernetes_validate
import pytest
import yaml

from craft_apps.compat import UTC
from craft_apps.domain import AppSpec
from craft_apps.host.health import RULES
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "config" / "kubernetes" / "craft-apps.yaml"


def pod() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(MANIFEST.read_text())["spec"]["template"]["spec"]
    return spec


def containers() -> dict[str, dict[str, Any]]:
    return {container["name"]: container for container in pod()["containers"]}


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container.get("env", [])}


def test_it_is_valid_against_the_kubernetes_schema_strictly():
    document = yaml.safe_load(MANIFEST.read_text())
    version = kubernetes_validate.latest_version()
    assert version.startswith(kubernetes_validate.validate(document, version, strict=True))
    broken = yaml.safe_load(MANIFEST.read_text())
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["periodSeconds"] = "often"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, version, strict=True)


def test_web_and_poller_share_the_state_volume_as_one_user():
    web, poller = containers()["web"], containers()["poller"]
    assert pod()["securityContext"]["runAsUser"] == 10001
    assert not any("runAsUser" in c.get("securityContext", {}) for c in (web, poller)), "one user for both"
    mounts = {c["name"]: {m["name"]: m["mountPath"] for m in c["volumeMounts"]} for c in (web, poller)}
    assert mounts["web"]["state"] == mounts["poller"]["state"] == env_of(web)["CRAFT_APPS_STATE_DIR"]
    assert env_of(poller)["CRAFT_APPS_STATE_DIR"] == env_of(web)["CRAFT_APPS_STATE_DIR"]
    assert mounts["web"]["metrics"] == env_of(web)["PROMETHEUS_MULTIPROC_DIR"]
    assert {volume["name"]: volume for volume in pod()["volumes"]}["state"] == {
        "name": "state",
        "emptyDir": {},
    }
    assert poller["command"][-1] == "poll_craft_releases"


def test_the_probes_use_the_health_rules_meant_for_them():
    web, poller = containers()["web"], containers()["poller"]
    readiness = urlsplit(web["readinessProbe"]["httpGet"]["path"])
    assert readiness.path == "/v1/craft_apps/health"
    assert parse_qs(readiness.query)["rules"] == ["state_file,poller"]
    assert set(parse_qs(readiness.query)["rules"][0].split(",")) <= set(RULES)
    assert web["livenessProbe"]["httpGet"]["path"] == "/v1/craft_apps/release_info"
    assert poller["livenessProbe"]["exec"]["command"][2:] == [
        "craft_apps_status",
        "--check",
        "--rule",
        "poller",
    ]


@pytest.mark.slow
def test_the_pollers_liveness_command_fails_without_a_poller_and_passes_after_one(tmp_path: Path):
    poller = containers()["poller"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(env_of(poller), CRAFT_APPS_STATE_DIR=str(tmp_path / "state"))
    probe = [sys.executable, *poller["livenessProbe"]["exec"]["command"][1:]]
    before = subprocess.run(probe, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert before.returncode == 1 and before.stdout.startswith("poller: no state file at ")
    app = AppSpec("photocraft", "PhotoCraft", "storytold/photocraft")
    with FakeGitHub() as github:
        github.publish(app.repo, demo_release(app, "1.0.0", datetime(2026, 10, 8, tzinfo=UTC)))
        env.update(
            CRAFT_APPS_RELEASE_GITHUB_API_URL=github.url,
            CRAFT_APPS_RELEASE_APPS="photocraft=PhotoCraft=storytold/photocraft",
        )
        polled = subprocess.run(
            [sys.executable, *poller["command"][1:], "--once"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            timeout=60,
        )
    assert polled.returncode == 0, polled.stderr
    after = subprocess.run(probe, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert after.returncode == 0, after.stdout + after.stderr
