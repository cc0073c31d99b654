"""The version is written in one place, ``craft_apps.__version__``; the wheel (setuptools' dynamic
version), the docs site (docs/conf.py), the example Dockerfile and the Kubernetes manifests that
name its image all follow it. A copy that names another version fails here."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import craft_apps

ROOT = Path(__file__).resolve().parents[1]
# Where a version of this package is named outside the package: the image's tag, the Dockerfile's
# build argument, a pinned install of the package.
NAMED = re.compile(
    r"craft-apps:(?P<tag>\w+(?:[.+-]\w+)*)"
    r"|CRAFT_APPS_VERSION=(?P<arg>\w+(?:[.+-]\w+)*)"
    r"|django[-_]craft[-_]apps==(?P<pin>\w+(?:[.+-]\w+)*)",
    re.IGNORECASE,
)


def test_the_version_is_written_once_and_the_wheel_and_the_docs_read_it():
    assert re.fullmatch(r"\d+\.\d+\.\d+", craft_apps.__version__)
    # Read as text: Python 3.10 has no tomllib.
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^dynamic = \["version"\]$', project, re.MULTILINE)
    assert not re.search(r'^version = "', project, re.MULTILINE)
    assert 'version = { attr = "craft_apps.__version__" }' in project

    spec = importlib.util.spec_from_file_location("docs_conf", ROOT / "docs" / "conf.py")
    assert spec is not None and spec.loader is not None
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    assert conf.release == conf.version == craft_apps.__version__


def named_versions(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [next(value for value in match.groups() if value) for match in NAMED.finditer(text)]


def test_the_dockerfile_and_the_manifests_name_the_packages_version():
    examples = ROOT / "examples" / "deploy"
    dockerfile = named_versions(examples / "Dockerfile")
    manifests = [v for path in sorted((examples / "kubernetes").glob("*.yaml")) for v in named_versions(path)]
    assert dockerfile and manifests, "the Dockerfile's version and the manifests' image tag"
    elsewhere = [
        (path.relative_to(ROOT), version)
        for path in [*examples.rglob("*"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
        if path.is_file()
        for version in named_versions(path)
    ]
    wrong = [(where, version) for where, version in elsewhere if version != craft_apps.__version__]
    assert not wrong, f"craft_apps.__version__ is {craft_apps.__version__}; these name another: {wrong}"
