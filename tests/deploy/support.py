"""What the deployment tests share: the examples (examples/deploy/) with their placeholders filled,
by default with this repository's site (config.production), the Kubernetes example read as the
cluster would read it (each container's environment from its ConfigMap, Secret and env), a fresh
PostgreSQL database for the production settings, and a strong secret key."""

from __future__ import annotations

import os
import re
import secrets
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from psycopg import sql
from psycopg.conninfo import make_conninfo

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "deploy"
KUBERNETES = EXAMPLES / "kubernetes"
MANIFEST = KUBERNETES / "craft-apps.yaml"
SECRET_EXAMPLE = KUBERNETES / "craft-apps-secrets.example.yaml"
NGINX_SITE = EXAMPLES / "nginx" / "craft-apps.conf"
DOCKERFILE = EXAMPLES / "Dockerfile"
PLACEHOLDER = re.compile(r"@[A-Z_]+@")
# This repository's site (its production settings) in the examples' places for a site's modules.
THIS_SITE = {"@SETTINGS_MODULE@": "config.production", "@WSGI_APPLICATION@": "config.wsgi"}


def filled(text: str, values: Mapping[str, str]) -> str:
    """``text`` with its placeholders replaced by ``values``; none may be left."""
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    left = sorted(set(PLACEHOLDER.findall(text)))
    assert not left, f"placeholders left unfilled: {left}"
    return text


def documents(path: Path = MANIFEST, values: Mapping[str, str] | None = THIS_SITE) -> list[dict[str, Any]]:
    """The YAML documents of ``path``, its placeholders filled with ``values`` (None: as shipped)."""
    text = path.read_text()
    return [doc for doc in yaml.safe_load_all(text if values is None else filled(text, values)) if doc]


def resource(kind: str, name: str) -> dict[str, Any]:
    for doc in (*documents(), *documents(SECRET_EXAMPLE)):
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            return doc
    raise AssertionError(f"no {kind} {name} in the Kubernetes example")


def pod() -> dict[str, Any]:
    spec: dict[str, Any] = resource("Deployment", "craft-apps")["spec"]["template"]["spec"]
    return spec


def containers() -> dict[str, dict[str, Any]]:
    return {container["name"]: container for container in pod()["containers"]}


def environment_of(container: dict[str, Any], secret: dict[str, str] | None = None) -> dict[str, str]:
    """The container's environment as the kubelet builds it: envFrom in order, then env; the
    Secret's values replaced by ``secret``'s where given."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(resource("ConfigMap", source["configMapRef"]["name"])["data"])
        else:
            values = dict(resource("Secret", source["secretRef"]["name"])["stringData"])
            unknown = set(secret or {}) - set(values)
            assert not unknown, f"the test replaces values the Secret doesn't have: {unknown}"
            env.update(values, **(secret or {}))
    env.update({item["name"]: item["value"] for item in container.get("env", [])})
    return env


def outside_environment() -> dict[str, str]:
    """This process's environment without the settings a test might have set."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CRAFT_APPS_", "DJANGO_", "PROMETHEUS_")) and k != "DATABASE_URL"
    }


def strong_secret_key() -> str:
    return secrets.token_urlsafe(50)


def postgres_server() -> dict[str, str]:
    """Where PostgreSQL answers: the suite's own when it runs on PostgreSQL, else the server
    .ci/postgres starts (127.0.0.1:5432, user postgres trusted on local TCP)."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"] == "django.db.backends.postgresql":
        return {
            "host": db["HOST"] or "127.0.0.1",
            "port": str(db["PORT"] or 5432),
            "user": db["USER"] or "postgres",
            "password": db["PASSWORD"] or "",
        }
    return {
        "host": "127.0.0.1",
        "port": "5432",
        "user": os.environ.get("DJANGO_DB_USER", "postgres"),
        "password": "",
    }


@contextmanager
def postgres_database() -> Iterator[str]:
    """A new, empty PostgreSQL database for the test, as a DATABASE_URL; dropped afterwards."""
    server = postgres_server()
    name = f"craft_apps_deploy_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(
            make_conninfo(dbname="postgres", connect_timeout=5, **server), autocommit=True
        )
    except psycopg.OperationalError as err:
        pytest.fail(
            f"PostgreSQL is needed at {server['host']}:{server['port']} (`source .ci/postgres` starts "
            f"Debian's): {str(err).strip().splitlines()[0]}",
            pytrace=False,
        )
    with admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            password = f":{server['password']}" if server["password"] else ""
            yield f"postgresql://{server['user']}{password}@{server['host']}:{server['port']}/{name}"
        finally:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
