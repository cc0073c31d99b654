#!/bin/sh
# Adds craft_apps, its endpoint and its offline API docs to a site made by
# `django-admin startproject mysite`: run `python -m craft_apps.install_example` beside manage.py
# (another project name as $1) after installing craft_apps and drf-spectacular-sidecar.
# It says what it changed; run again, it changes nothing (each file's block is added once,
# recognised by its first import). The wheel ships this file (craft_apps/install_example.sh).
set -eu
project="${1:-mysite}"

if [ ! -f "$project/settings.py" ] || [ ! -f "$project/urls.py" ]; then
  echo "install_example: no $project/settings.py and $project/urls.py here: run it beside manage.py, naming the project (python -m craft_apps.install_example <project>)." >&2
  exit 2
fi

if grep -q "^from craft_apps.api.docs_settings import spectacular_settings" "$project/settings.py"; then
  echo "$project/settings.py: unchanged (it has craft_apps's settings already)"
else
  cat >> "$project/settings.py" <<'EOF'

# craft_apps, its API (Django REST framework, drf-spectacular) and the API's docs, whose
# Swagger UI and ReDoc files the site serves itself (drf-spectacular-sidecar).
# The docs' settings are the demo's: title, description, version, no schema endpoint listed,
# Swagger UI and ReDoc from the sidecar, no online validator badge.
from craft_apps.api.docs_settings import spectacular_settings  # noqa: E402

INSTALLED_APPS += ["rest_framework", "drf_spectacular", "drf_spectacular_sidecar", "craft_apps"]
REST_FRAMEWORK = {"DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema"}
SPECTACULAR_SETTINGS = spectacular_settings()
EOF
  echo "$project/settings.py: added craft_apps and its API's apps to INSTALLED_APPS, REST_FRAMEWORK, SPECTACULAR_SETTINGS"
fi

if grep -q 'include("craft_apps.urls")' "$project/urls.py"; then
  echo "$project/urls.py: unchanged (it has craft_apps's URLs already)"
else
  cat >> "$project/urls.py" <<'EOF'

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
EOF
  echo "$project/urls.py: added /v1/craft_apps/ (the endpoint), /api/schema/, /api/docs/ and /api/redoc/"
fi
