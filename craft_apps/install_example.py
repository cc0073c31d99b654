"""``python -m craft_apps.install_example [project]``: adds craft_apps, its endpoint and its
offline API docs to a site made by ``django-admin startproject``, run from the directory of its
``manage.py`` (the project ``mysite`` unless named). Plain Python, so it runs wherever the site
does. It appends the two blocks below, which docs/installation.md prints, and says what it
changed; run again, it changes nothing (each file's block is added once, recognised by its first
import). A project name without ``settings.py`` and ``urls.py`` is refused with one line."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

USAGE_EXIT = 2

SETTINGS_BLOCK = """\
# craft_apps, its API (Django REST framework, drf-spectacular) and the API's docs, whose
# Swagger UI and ReDoc files the site serves itself (drf-spectacular-sidecar).
# The docs' settings are the demo's: title, description, version, no schema endpoint listed,
# Swagger UI and ReDoc from the sidecar, no online validator badge.
from craft_apps.api.docs_settings import spectacular_settings  # noqa: E402

INSTALLED_APPS += ["rest_framework", "drf_spectacular", "drf_spectacular_sidecar", "craft_apps"]
REST_FRAMEWORK = {"DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema"}
SPECTACULAR_SETTINGS = spectacular_settings()
# Starts each web process's background work (notices, guarded rollouts) when it starts.
MIDDLEWARE += ["craft_apps.api.startup.StartBackground"]
"""

URLS_BLOCK = """\
from django.urls import include  # noqa: E402
from drf_spectacular.views import (  # noqa: E402
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

urlpatterns += [
    path("", include("craft_apps.urls")),  # GET /v1/craft_apps/release_info
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    # craft_apps's ReDoc page is drf-spectacular's without Google's fonts.
    path(
        "api/redoc/",
        SpectacularRedocView.as_view(url_name="schema", template_name="craft_apps/redoc.html"),
        name="redoc",
    ),
]
"""


@dataclass(frozen=True)
class Addition:
    """A block to append to one file of the project, and how to tell it is there already."""

    file: str
    block: str
    there_already: re.Pattern[str]  # a line of the block: found, the block is not added again
    added: str
    unchanged: str


ADDITIONS = (
    Addition(
        "settings.py",
        SETTINGS_BLOCK,
        re.compile(r"^from craft_apps\.api\.docs_settings import spectacular_settings", re.MULTILINE),
        "added craft_apps and its API's apps to INSTALLED_APPS, REST_FRAMEWORK, SPECTACULAR_SETTINGS,"
        " MIDDLEWARE",
        "unchanged (it has craft_apps's settings already)",
    ),
    Addition(
        "urls.py",
        URLS_BLOCK,
        re.compile(re.escape('include("craft_apps.urls")')),
        "added /v1/craft_apps/ (the endpoint), /api/schema/, /api/docs/ and /api/redoc/",
        "unchanged (it has craft_apps's URLs already)",
    ),
)


def apply(addition: Addition, project: str) -> str:
    """Append the block to the project's file unless it is there; return the line to print."""
    path = Path(project) / addition.file
    if addition.there_already.search(path.read_text(encoding="utf-8")):
        return f"{project}/{addition.file}: {addition.unchanged}"
    with path.open("a", encoding="utf-8") as out:
        out.write("\n" + addition.block)
    return f"{project}/{addition.file}: {addition.added}"


def main(argv: list[str]) -> int:
    """Add craft_apps to the project named in ``argv`` (``mysite`` by default)."""
    project = argv[0] if argv else "mysite"
    if not all((Path(project) / addition.file).is_file() for addition in ADDITIONS):
        sys.stderr.write(
            f"install_example: no {project}/settings.py and {project}/urls.py here: run it beside"
            " manage.py, naming the project (python -m craft_apps.install_example <project>).\n"
        )
        return USAGE_EXIT
    for addition in ADDITIONS:
        sys.stdout.write(apply(addition, project) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
