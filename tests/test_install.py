"""The package as a new user gets it: the sdist and the wheel built from a copy of the source, the
wheel installed into a fresh virtual environment with what docs/installation.md installs beside
it, a new ``django-admin startproject`` site set up by the page's steps (the install script, the
static files block), then ``check --deploy``, the endpoint and the offline docs under the page's
gunicorn command. Every ``python -m craft_apps...`` the docs show is in the wheel and imports
there with the runtime dependencies alone.

The environment gets exactly the versions this test runs with (a constraints file from this
environment). Their wheels are kept in ``.nox/wheelhouse`` (``CRAFT_APPS_WHEELHOUSE``): once it
holds them the install needs no network; when it lacks one, pip downloads it, from its cache
when it can.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import textwrap
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

import craft_apps
from craft_apps.api.docs_settings import CONTRACT_VERSION, spectacular_settings
from craft_apps.conf import DEFAULT_APPS
from craft_apps.install_example import SETTINGS_BLOCK, URLS_BLOCK
from tests.docs_pages import check_offline
from tests.support import ONE_AT_A_TIME, free_port
from tests.support.new_site import static_files_block, wait_until_served
from tests.support.source import copy_of_the_source

ROOT = Path(__file__).resolve().parent.parent
INSTALLATION = ROOT / "docs" / "installation.md"
# Where the docs show commands: the pages, the README and the deployment examples.
DOCUMENTS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md",
             *sorted(p for p in (ROOT / "examples").rglob("*") if p.is_file())]  # fmt: skip
RUN_MODULE = re.compile(r"python3? -m (craft_apps(?:\.\w+)*)")
# What step 1 installs beside the wheel, and step 7's WhiteNoise.
BESIDE_THE_WHEEL = ["drf-spectacular-sidecar", "gunicorn", "whitenoise"]
# What the README's install command adds in a site that has Django: pip keeps that version.
KEEP_DJANGO = "\"django==$(python -c 'import django; print(django.__version__)')\""
WHEELHOUSE = Path(os.environ.get("CRAFT_APPS_WHEELHOUSE") or ROOT / ".nox" / "wheelhouse")

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME]


@dataclass
class Built:
    sdist: Path
    wheel: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """``python -m build``: the sdist, then the wheel built from the unpacked sdist."""
    source = tmp_path_factory.mktemp("source") / "django-craft-apps"
    copy_of_the_source(source)
    dist = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)])
    [sdist] = dist.glob("django_craft_apps-*.tar.gz")
    [wheel] = dist.glob("django_craft_apps-*.whl")
    return Built(sdist, wheel)


def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{command}: {result.stdout}{result.stderr}"
    return result  # type: ignore[no-any-return]


def test_the_sdist_ships_no_tests_and_the_wheel_has_the_metadata(built: Built):
    with tarfile.open(built.sdist) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"} <= names
    assert "craft_apps/templates/craft_apps/redoc.html" in names
    assert not any(name.startswith(("tests/", "config/", "bench/")) for name in names), sorted(names)

    wheel = zipfile.ZipFile(built.wheel)
    files = set(wheel.namelist())
    version = craft_apps.__version__
    assert built.wheel.name == f"django_craft_apps-{version}-py3-none-any.whl"
    assert {
        "craft_apps/fleet/guarded_write.lua",
        "craft_apps/py.typed",
        "craft_apps/templates/craft_apps/redoc.html",
        "craft_apps/install_example.py",
        "craft_apps/management/commands/poll_craft_releases.py",
        f"django_craft_apps-{version}.dist-info/licenses/LICENSE",
    } <= files
    assert not any(name.startswith(("config/", "tests/", "bench/")) for name in files)
    assert not any(name.endswith(".sh") for name in files), "the install example is plain Python"
    meta = wheel.read(f"django_craft_apps-{version}.dist-info/METADATA").decode()
    lines = set(meta.splitlines())
    assert {
        f"Version: {version}",
        "License-Expression: MIT",
        "Requires-Python: >=3.10",
        "Requires-Dist: Django<6.2,>=4.2",
        "Classifier: Framework :: Django",
        *(f"Classifier: Framework :: Django :: {v}" for v in ("4.2", "5.2", "6.0", "6.1")),
        *(f"Classifier: Programming Language :: Python :: 3.{v}" for v in (10, 11, 12, 13)),
    } <= lines
    assert any(line.startswith("Project-URL: Changelog, ") for line in lines)
    assert f"## {version} " in (ROOT / "CHANGELOG.md").read_text()


def modules_the_docs_run() -> dict[str, set[str]]:
    """Each module a document shows as ``python -m craft_apps...``, with the documents."""
    found: dict[str, set[str]] = {}
    for document in DOCUMENTS:
        for module in RUN_MODULE.findall(document.read_text(encoding="utf-8")):
            found.setdefault(module, set()).add(str(document.relative_to(ROOT)))
    return found


def test_every_module_the_docs_run_is_in_the_wheel(built: Built):
    modules = modules_the_docs_run()
    assert {"craft_apps.install_example", "craft_apps.testing.fake_github"} <= set(modules)
    files = set(zipfile.ZipFile(built.wheel).namelist())
    missing = {
        module: documents
        for module, documents in modules.items()
        if not {f"{module.replace('.', '/')}.py", f"{module.replace('.', '/')}/__main__.py"} & files
    }
    assert not missing, f"the docs run modules the wheel lacks: {missing}"


def test_the_install_page_shows_what_the_install_script_appends_as_it_is():
    blocks = re.findall(r"```python\n(.*?)```", INSTALLATION.read_text(encoding="utf-8"), re.DOTALL)
    shown = [textwrap.dedent(block).strip() for block in blocks]
    for block in (SETTINGS_BLOCK, URLS_BLOCK):
        assert block.strip() in shown


def pins_of_this_environment(path: Path) -> Path:
    """Every distribution installed here at its version, but this project: the new environment
    gets what the matrix tested, and only what the wheel and the sidecar depend on."""
    pins = sorted(
        f"{dist.metadata['Name']}=={dist.version}"
        for dist in metadata.distributions()
        if dist.metadata["Name"] and dist.metadata["Name"].lower() != "django-craft-apps"
    )
    path.write_text("\n".join(pins) + "\n")
    return path


def download(pip: list[str], *wanted: str) -> None:
    """Into the wheelhouse, which never keeps a wheel of ours: pip takes a file of the same name
    there as already downloaded, and the wheel under test is always named by its path."""
    drop_ours()
    run([*pip, "download", "--quiet", "--dest", str(WHEELHOUSE), *wanted])
    drop_ours()


def drop_ours() -> None:
    for ours in WHEELHOUSE.glob("django_craft_apps-*"):
        ours.unlink()


def install(python: Path, wheel: Path, constraints: Path) -> None:
    """Offline from the wheelhouse; after downloading into it when something is missing."""
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    wanted = [str(wheel), *BESIDE_THE_WHEEL, "-c", str(constraints)]
    offline = [*pip, "install", "--quiet", "--no-index", "--find-links", str(WHEELHOUSE), *wanted]
    if subprocess.run(offline, capture_output=True).returncode == 0:
        return
    download(pip, *wanted)
    run(offline)


@dataclass
class Site:
    python: Path  # the new environment's
    directory: Path
    env: dict[str, str]

    def run(self, *command: str) -> subprocess.CompletedProcess[str]:
        return run([str(self.python.parent / command[0]), *command[1:]], cwd=self.directory, env=self.env)


@pytest.fixture(scope="module")
def new_site(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """A fresh environment with what the installation page installs, and a startproject site set
    up by its steps: the install script, migrate, the static files block and collectstatic."""
    page = INSTALLATION.read_text(encoding="utf-8")
    assert "pip install gunicorn" in page and "(`pip install whitenoise`)" in page
    where = tmp_path_factory.mktemp("new-site")
    venv = where / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    install(venv / "bin" / "python", built.wheel, pins_of_this_environment(where / "pins.txt"))
    directory = where / "site"
    directory.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "CRAFT_APPS_", "PYTHON"))
    }
    site = Site(venv / "bin" / "python", directory, env | {"PWD": str(directory)})
    site.run("django-admin", "startproject", "mysite", str(directory))
    # From the installed wheel, as the README says: no checkout needed.
    site.run("python", "-m", "craft_apps.install_example")
    with (directory / "mysite" / "settings.py").open("a", encoding="utf-8") as settings:
        settings.write("\n" + static_files_block())
    site.run("python", "manage.py", "migrate", "--noinput")
    site.run("python", "manage.py", "collectstatic", "--noinput")
    return site


def gunicorn_command(port: int) -> list[str]:
    """Step 8's gunicorn line as the page prints it, bound to ``port``."""
    blocks = re.findall(r"```sh\n(.*?)```", INSTALLATION.read_text(encoding="utf-8"), re.DOTALL)
    [line] = [
        line.strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip().startswith("gunicorn ")
    ]
    assert "--bind 127.0.0.1:8000" in line
    return shlex.split(line.replace("127.0.0.1:8000", f"127.0.0.1:{port}"))


@pytest.fixture(scope="module")
def served(new_site: Site) -> Iterator[str]:
    """The new site under the page's gunicorn command: its URL."""
    port = free_port()
    command = gunicorn_command(port)
    log = new_site.directory / "gunicorn.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [str(new_site.python.parent / command[0]), *command[1:]],
            cwd=new_site.directory, env=new_site.env, stdout=output, stderr=output, start_new_session=True,
        )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_served(f"{url}/v1/craft_apps/release_info", server, log)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=15)


def test_the_installed_site_passes_our_deploy_checks(new_site: Site):
    where = new_site.run("python", "-c", "import craft_apps; print(craft_apps.__file__)")
    assert where.stdout.startswith(str(new_site.python.parent.parent)), "craft_apps comes from the wheel"

    # A new startproject site has Django's own deploy issues (DEBUG, SECRET_KEY; from Django 6.1
    # an error for its console mailer, so the command fails): none of them is ours.
    deploy = subprocess.run(
        [str(new_site.python), "manage.py", "check", "--deploy"],
        cwd=new_site.directory, env=new_site.env, capture_output=True, text=True,
    )  # fmt: skip
    report = deploy.stdout + deploy.stderr
    assert "System check identified" in report, report
    assert "(craft_apps." not in report and "(drf_spectacular." not in report, report
    ours = new_site.run(
        "python", "manage.py", "check", "--deploy", "--tag", "craft_apps", "--fail-level", "WARNING"
    )
    assert "System check identified no issues" in ours.stdout
    assert (new_site.directory / "var" / "craft_apps").is_dir(), (
        "the state directory's default, under BASE_DIR"
    )


def test_under_gunicorn_the_new_site_serves_the_endpoint_and_offline_docs(served: str):
    def fetch(path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(served + path, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    status, body = fetch("/v1/craft_apps/release_info")
    answer = json.loads(body)
    assert status == 200 and answer["success"] is True
    assert len(answer["release_info"]["apps"]) == 13
    check_offline(fetch, served, "/api/docs/")
    check_offline(fetch, served, "/api/redoc/")
    status, schema = fetch("/api/schema/")
    assert status == 200 and b"GetCraftAppsReleaseInfoResponse" in schema
    # The demo's finished docs: the same info, no schema endpoint listed, no Authorize button.
    status, body = fetch("/api/schema/?format=json")
    document = json.loads(body)
    assert document["info"] == {
        "title": "Craft Apps release info",
        "version": CONTRACT_VERSION,
        "description": spectacular_settings()["DESCRIPTION"],
    }
    assert set(document["paths"]) >= {"/v1/craft_apps/health", "/v1/craft_apps/github_webhook"}
    assert not any(path.startswith("/api/") for path in document["paths"])
    assert "securitySchemes" not in document.get("components", {})


def test_the_modules_the_docs_run_import_with_the_runtime_dependencies_alone(new_site: Site):
    """In the new environment (the wheel's dependencies, the sidecar, gunicorn and WhiteNoise;
    no test tools such as responses), without the site's settings."""
    absent = subprocess.run([str(new_site.python), "-c", "import responses"], capture_output=True)
    assert absent.returncode != 0, "the new environment has no test tools"
    env = {key: value for key, value in new_site.env.items() if key != "DJANGO_SETTINGS_MODULE"}
    for module in modules_the_docs_run():
        imported = subprocess.run(
            [str(new_site.python), "-c", f"import {module}"], env=env, capture_output=True, text=True
        )
        assert imported.returncode == 0, f"{module}: {imported.stderr}"


def test_the_fake_github_serves_the_demo_releases_from_the_wheel(new_site: Site):
    """``python -m craft_apps.testing.fake_github``, as the quickstart runs it in a site's
    environment: its start line is the signal, then one app's latest release answers."""
    server = subprocess.Popen(
        [str(new_site.python), "-m", "craft_apps.testing.fake_github", "--port", "0"],
        cwd=new_site.directory, env=new_site.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        started = re.fullmatch(r"fake GitHub serving \d+ release\(s\) at (http://127\.0\.0\.1:\d+)\n", line)
        assert started, line + server.stderr.read()
        latest = f"{started[1]}/repos/{DEFAULT_APPS[0].repo}/releases/latest"
        with urllib.request.urlopen(latest, timeout=10) as answer:
            assert answer.status == 200 and json.loads(answer.read())["tag_name"]
    finally:
        server.terminate()
        server.wait(timeout=15)


def test_the_readme_install_command_names_the_sites_django():
    readme = (ROOT / "README.md").read_text()
    assert f"pip install ./django-craft-apps drf-spectacular-sidecar {KEEP_DJANGO}" in readme
    assert f"drf-spectacular-sidecar {KEEP_DJANGO}" in readme.split("python -m build", 1)[1], "the wheel too"


def pinned(requirements: str, name: str) -> str:
    [line] = [line for line in (ROOT / "requirements" / requirements).read_text().splitlines()
              if line.startswith(f"{name}==")]  # fmt: skip
    return line.split("==", 1)[1]


def django_replaced(python: Path, wanted: list[str], report: Path, offline: bool) -> bool:
    """Whether ``pip install wanted`` (a dry run) would install another Django; offline, False
    too when the wheelhouse lacks something ``wanted`` needs (a fresh clone's, before any other
    test filled it): the caller then downloads it and asks again."""
    where = ["--no-index", "--find-links", str(WHEELHOUSE)] if offline else []
    command = [str(python), "-m", "pip", "install", "--quiet", "--dry-run", "--report", str(report)]
    if offline:
        if subprocess.run([*command, *where, *wanted], capture_output=True).returncode != 0:
            return False
    else:
        run([*command, *wanted])
    names = {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    return "django" in names


def python_for(django: str) -> str:
    """This Python when it supports ``django``; else the newest 3.12 or 3.13 found (the matrix
    needs both), as noxfile.py finds it: Django 6 needs Python 3.12."""
    if not django.startswith("6.") or sys.version_info >= (3, 12):
        return sys.executable
    for version in ("3.13", "3.12"):
        found = shutil.which(f"python{version}")
        if found and subprocess.run([found, "-c", ""], capture_output=True).returncode == 0:
            return found
        pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
        installed = sorted(pyenv.glob(f"{version}.*/bin/python{version}"))
        if installed:
            return str(installed[-1])
    raise AssertionError("no Python 3.12 or 3.13 found for Django 6 (the matrix needs both)")


def site_environment(tmp_path: Path, django: str) -> Path:
    """A new environment holding a site's Django (pinned) and nothing else: its python."""
    venv = tmp_path / "venv"
    run([python_for(django), "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    site_django = f"Django=={django}"
    offline = [str(python), "-m", "pip", "install", "--quiet", "--no-index", "--find-links", str(WHEELHOUSE)]
    if subprocess.run([*offline, site_django], capture_output=True).returncode != 0:
        download([str(python), "-m", "pip"], site_django)
        run([*offline, site_django])
    return python


# The oldest Django a site may have, and the newest: a site on Django 6.1 was refused (the
# package said Django<6.1), or downgraded to 6.0 when it didn't name its Django.
@pytest.mark.parametrize("requirements", ["django-4.2.txt", "django-6.1.txt"])
def test_the_readme_install_command_keeps_the_sites_django(built: Built, tmp_path: Path, requirements: str):
    django = pinned(requirements, "Django")
    python = site_environment(tmp_path, django)
    pip = [str(python), "-m", "pip"]
    wheel = [str(built.wheel), "drf-spectacular-sidecar"]

    # The trap this guards against: without naming the site's Django, pip takes the newest
    # djangorestframework and django-redis (Django 5.2 and later only) and replaces Django. The
    # wheelhouse must offer those newest versions, as the index does, for the test to mean it.
    if requirements == "django-4.2.txt" and not django_replaced(python, wheel, tmp_path / "bare.json", True):
        assert django_replaced(python, wheel, tmp_path / "bare.json", offline=False), "the index's newest"
        download(pip, *wheel)
        assert django_replaced(python, wheel, tmp_path / "bare.json", offline=True)

    # The README's command, run by a shell with the environment's python and pip first.
    command = f"pip install --quiet {built.wheel} drf-spectacular-sidecar {KEEP_DJANGO}"
    env = os.environ | {"PATH": f"{python.parent}:{os.environ['PATH']}"}
    where = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE)}
    if subprocess.run(["sh", "-c", command], env=env | where, capture_output=True).returncode != 0:
        download(pip, *wheel, f"Django=={django}")
        run(["sh", "-c", command], env=env | where)
    version = run([str(python), "-c", "import django; print(django.get_version())"]).stdout.strip()
    assert version == django
    run([str(python), "-m", "pip", "check"])
    drf = run([str(python), "-c", "import rest_framework; print(rest_framework.VERSION)"]).stdout.strip()
    assert drf == pinned(requirements, "djangorestframework"), "the newest that supports that Django"
