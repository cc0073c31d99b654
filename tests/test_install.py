"""The package as a new user gets it: the sdist and the wheel built from a copy of the source, the
wheel installed into a fresh virtual environment beside a new ``django-admin startproject``
site, the docs' install script applied to it, then ``check --deploy``, the endpoint and the
offline docs on a real ``runserver``.

The environment gets exactly the versions this test runs with (a constraints file from this
environment). Their wheels are kept in ``.nox/wheelhouse`` (``CRAFT_APPS_WHEELHOUSE``): once it
holds them the install needs no network; when it lacks one, pip downloads it, from its cache
when it can.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import time
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
from tests.docs_pages import check_offline
from tests.support import ONE_AT_A_TIME, free_port
from tests.support.source import copy_of_the_source

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "craft_apps" / "install_example.sh"
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
        "craft_apps/install_example.sh",
        "craft_apps/install_example.py",
        "craft_apps/management/commands/poll_craft_releases.py",
        f"django_craft_apps-{version}.dist-info/licenses/LICENSE",
    } <= files
    assert not any(name.startswith(("config/", "tests/", "bench/")) for name in files)
    # The stand-in, the demo releases and the fake clock serve the tests from the source tree.
    assert not any(name.startswith("craft_apps/testing/") for name in files), sorted(files)
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


def test_the_install_page_shows_what_the_install_script_appends_as_it_is():
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "installation.md").read_text(), re.DOTALL)
    appended = re.findall(r"<<'EOF'\n(.*?)^EOF$", SCRIPT.read_text(), re.DOTALL | re.MULTILINE)
    assert len(appended) == 2, "settings.py's block and urls.py's"
    shown = [textwrap.dedent(block).strip() for block in blocks]
    for block in appended:
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
    wanted = [str(wheel), "drf-spectacular-sidecar", "-c", str(constraints)]
    offline = [*pip, "install", "--quiet", "--no-index", "--find-links", str(WHEELHOUSE), *wanted]
    if subprocess.run(offline, capture_output=True).returncode == 0:
        return
    download(pip, *wanted)
    run(offline)


@pytest.fixture
def new_site(built: Built, tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh environment with the wheel, and a startproject site with the script applied."""
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    install(python, built.wheel, pins_of_this_environment(tmp_path / "pins.txt"))
    site = tmp_path / "site"
    site.mkdir()
    run([str(venv / "bin" / "django-admin"), "startproject", "mysite", str(site)])
    # From the installed wheel, as the README says: no checkout needed.
    run([str(python), "-m", "craft_apps.install_example"], cwd=site)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "CRAFT_APPS_", "PYTHON"))
    }
    yield python, env | {"PWD": str(site)}


def test_the_readme_install_gives_a_new_site_the_endpoint_and_offline_docs(
    new_site: tuple[Path, dict[str, str]],
):
    python, env = new_site
    site = Path(env["PWD"])
    where = run([str(python), "-c", "import craft_apps; print(craft_apps.__file__)"], cwd=site, env=env)
    assert where.stdout.startswith(str(python.parent.parent)), "craft_apps comes from the wheel"

    # A new startproject site has Django's own deploy issues (DEBUG, SECRET_KEY; from Django 6.1
    # an error for its console mailer, so the command fails): none of them is ours.
    deploy = subprocess.run(
        [str(python), "manage.py", "check", "--deploy"], cwd=site, env=env, capture_output=True, text=True
    )
    report = deploy.stdout + deploy.stderr
    assert "System check identified" in report, report
    assert "(craft_apps." not in report and "(drf_spectacular." not in report, report
    ours = run(
        [str(python), "manage.py", "check", "--deploy", "--tag", "craft_apps", "--fail-level", "WARNING"],
        cwd=site,
        env=env,
    )
    assert "System check identified no issues" in ours.stdout
    assert (site / "var" / "craft_apps").is_dir(), "the state directory's default, under BASE_DIR"

    port = free_port()
    server = subprocess.Popen(
        [str(python), "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=site,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    site_url = f"http://127.0.0.1:{port}"

    def fetch(path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(site_url + path, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = fetch("/v1/craft_apps/release_info")
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
                assert time.monotonic() < deadline, "runserver didn't answer within 30 s"
                time.sleep(0.1)
        answer = json.loads(body)
        assert status == 200 and answer["success"] is True
        assert len(answer["release_info"]["apps"]) == 13
        check_offline(fetch, site_url, "/api/docs/")
        check_offline(fetch, site_url, "/api/redoc/")
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
    finally:
        server.terminate()
        server.wait(10)


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
