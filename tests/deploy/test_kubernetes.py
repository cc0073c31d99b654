"""The Kubernetes example: valid against Kubernetes' own schema as shipped (kubernetes-validate
ships the schemas, so this runs offline), one pod = one host behind its own nginx, its parts wired
to each other (Service, probes, ConfigMaps, Secret, migration Job), the image the Dockerfile
example builds, the site named only through placeholders, and the poller's probe command works
(with this repository's site in them)."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import kubernetes_validate
import pytest

import craft_apps
from config.environment import PLACEHOLDER_SECRET_KEY
from craft_apps.host.health import RULES
from craft_apps.kernel.compat import UTC
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.deploy.support import (
    DOCKERFILE,
    MANIFEST,
    PLACEHOLDER,
    ROOT,
    SECRET_EXAMPLE,
    containers,
    documents,
    environment_of,
    outside_environment,
    pod,
    resource,
    strong_secret_key,
)
from tests.support import PHOTOCRAFT

PROBE_HOST = "localhost"


def test_every_document_is_valid_against_the_kubernetes_schema_strictly():
    version = kubernetes_validate.latest_version()
    everything = [*documents(MANIFEST, None), *documents(SECRET_EXAMPLE, None)]
    assert [doc["kind"] for doc in everything] == [
        "ConfigMap",
        "ConfigMap",
        "Job",
        "Deployment",
        "Service",
        "Secret",
    ]
    for document in everything:
        assert version.startswith(kubernetes_validate.validate(document, version, strict=True))
    broken = resource("Deployment", "craft-apps")
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["periodSeconds"] = "often"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, version, strict=True)


def test_every_container_of_the_site_runs_the_dockerfiles_image_tagged_with_the_package_version():
    job = resource("Job", "craft-apps-migrate")["spec"]["template"]["spec"]["containers"][0]
    ours = [containers()["web"], containers()["poller"], job]
    assert {c["image"] for c in ours} == {f"registry.example.com/craft-apps:{craft_apps.__version__}"}
    assert f"ARG CRAFT_APPS_VERSION={craft_apps.__version__}\n" in DOCKERFILE.read_text()
    assert {c["workingDir"] for c in ours} == {"/app"} and "\nWORKDIR /app\n" in DOCKERFILE.read_text()


def test_the_manifest_names_the_site_only_through_its_placeholders():
    text = MANIFEST.read_text()
    assert set(PLACEHOLDER.findall(text)) == {"@SETTINGS_MODULE@", "@WSGI_APPLICATION@"}
    shipped = {c["name"]: c for c in documents(MANIFEST, None)[3]["spec"]["template"]["spec"]["containers"]}
    assert shipped["web"]["command"][-1] == "@WSGI_APPLICATION@"
    assert documents(MANIFEST, None)[0]["data"]["DJANGO_SETTINGS_MODULE"] == "@SETTINGS_MODULE@"
    assert "config." not in text.split("apiVersion", 1)[1], "nothing of this repository's own site"


def test_web_nginx_and_poller_run_as_one_user_and_share_the_state_volume():
    web, poller, nginx = containers()["web"], containers()["poller"], containers()["nginx"]
    assert pod()["securityContext"]["runAsUser"] == 10001
    assert not any("runAsUser" in c.get("securityContext", {}) for c in (web, poller, nginx)), "one user"
    assert all(c["securityContext"]["readOnlyRootFilesystem"] for c in (web, poller, nginx))
    mounts = {c["name"]: {m["name"]: m["mountPath"] for m in c["volumeMounts"]} for c in (web, poller)}
    state_dir = environment_of(web)["CRAFT_APPS_STATE_DIR"]
    assert mounts["web"]["state"] == mounts["poller"]["state"] == state_dir
    assert environment_of(poller)["CRAFT_APPS_STATE_DIR"] == state_dir
    assert mounts["web"]["metrics"] == environment_of(web)["PROMETHEUS_MULTIPROC_DIR"]
    volumes = {volume["name"]: volume for volume in pod()["volumes"]}
    assert volumes["state"] == {"name": "state", "emptyDir": {}}
    assert poller["command"][-1] == "poll_craft_releases"


def test_all_run_the_production_settings_with_the_secret_and_one_shared_database():
    job = resource("Job", "craft-apps-migrate")["spec"]["template"]["spec"]["containers"][0]
    for container in (containers()["web"], containers()["poller"], job):
        env = environment_of(container)
        assert env["DJANGO_SETTINGS_MODULE"] == "config.production"
        assert env["DATABASE_URL"].startswith("postgresql://"), "one site database for every pod"
        assert env["DJANGO_SECRET_KEY"] == PLACEHOLDER_SECRET_KEY, "a placeholder the settings refuse"
        assert PROBE_HOST in env["DJANGO_ALLOWED_HOSTS"].split(",")
    assert job["command"][-2:] == ["migrate", "--noinput"]


def test_only_nginx_listens_on_the_pod_network_and_the_service_and_probes_go_through_it():
    web, nginx = containers()["web"], containers()["nginx"]
    bind = web["command"][web["command"].index("--bind") + 1]
    assert bind.startswith("127.0.0.1:"), "no sync worker on the pod network"
    assert "ports" not in web
    (port,) = nginx["ports"]
    service = resource("Service", "craft-apps")
    assert service["spec"]["selector"] == pod_labels()
    assert [p["targetPort"] for p in service["spec"]["ports"]] == [port["name"]]
    for probe in (web["readinessProbe"], web["livenessProbe"]):
        assert probe["httpGet"]["port"] == port["containerPort"]
        assert probe["httpGet"]["httpHeaders"] == [{"name": "Host", "value": PROBE_HOST}]
    conf = resource("ConfigMap", "craft-apps-nginx")["data"]["nginx.conf"]
    assert f"listen {port['containerPort']};" in conf
    assert f"proxy_pass http://{bind};" in conf
    mounts = {m["name"]: m["mountPath"] for m in nginx["volumeMounts"]}
    assert nginx["command"][-1] == mounts["nginx-conf"] + "/nginx.conf"


def pod_labels() -> dict[str, str]:
    labels: dict[str, str] = resource("Deployment", "craft-apps")["spec"]["template"]["metadata"]["labels"]
    return labels


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
    env = outside_environment()
    env.update(
        environment_of(poller, {"DJANGO_SECRET_KEY": strong_secret_key(), "CRAFT_APPS_REDIS_URL": ""}),
        CRAFT_APPS_STATE_DIR=str(tmp_path / "state"),
    )
    probe = [sys.executable, *poller["livenessProbe"]["exec"]["command"][1:]]
    before = subprocess.run(probe, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert before.returncode == 1 and before.stdout.startswith("poller: no state file at ")
    app = PHOTOCRAFT
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
