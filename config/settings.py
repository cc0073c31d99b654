"""The demo site: a plain Django project that mounts craft_apps.

Everything a deployment changes comes from the environment, so the same settings serve the
README's demo, the tests and a real host:

- ``DJANGO_SECRET_KEY``, ``DJANGO_DEBUG``, ``DJANGO_ALLOWED_HOSTS`` (comma separated);
- ``DATABASE_URL``-style settings: ``DJANGO_DB_ENGINE`` (default sqlite3), ``DJANGO_DB_NAME``,
  ``DJANGO_DB_HOST``, ``DJANGO_DB_PORT``, ``DJANGO_DB_USER``, ``DJANGO_DB_PASSWORD``;
- ``CRAFT_APPS_REDIS_URL``: when set, the ``craft_apps`` cache alias the poller coordinates
  through (its own URL, see the README);
- every ``CRAFT_APPS_*`` variable craft_apps reads itself.
"""

from __future__ import annotations

import os
from pathlib import Path

from craft_apps.api.docs_settings import spectacular_settings
from craft_apps.fleet.options import poller_cache

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "demo-only-not-secret")
DEBUG = os.environ.get("DJANGO_DEBUG", "false").strip().lower() in {"1", "true", "yes", "on"}
ALLOWED_HOSTS = [
    host.strip() for host in os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1").split(",")
]

INSTALLED_APPS = [
    "django.contrib.admin",  # craft_apps' renames and notices at /admin/
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "craft_apps",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves the static files (Swagger UI's and ReDoc's, from drf-spectacular-sidecar) from the
    # WSGI application itself, under gunicorn as under the test client.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Starts each web process's background work (notices, guarded rollouts) when it starts.
    "craft_apps.api.startup.StartBackground",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "config" / "templates"],  # the demo's landing page
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends." + os.environ.get("DJANGO_DB_ENGINE", "sqlite3"),
        "NAME": os.environ.get("DJANGO_DB_NAME", str(BASE_DIR / "var" / "demo.sqlite3")),
        "HOST": os.environ.get("DJANGO_DB_HOST", ""),
        "PORT": os.environ.get("DJANGO_DB_PORT", ""),
        "USER": os.environ.get("DJANGO_DB_USER", ""),
        "PASSWORD": os.environ.get("DJANGO_DB_PASSWORD", ""),
    }
}

CACHES: dict[str, dict[str, object]] = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
}

if os.environ.get("CRAFT_APPS_REDIS_URL", "").strip():
    # The poller's own alias: its own URL (so its own small pool) and timeouts; see
    # craft_apps.fleet.options.
    CACHES["craft_apps"] = poller_cache(os.environ["CRAFT_APPS_REDIS_URL"].strip())

STATIC_URL = "static/"
# WhiteNoise serves the installed apps' static files where they lie, so the demo needs no
# collectstatic step (a real site sets STATIC_ROOT, runs collectstatic and serves that).
WHITENOISE_USE_FINDERS = True
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REST_FRAMEWORK: dict[str, object] = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
}

# The package's docs settings, as the install snippet gives a site (craft_apps.api.docs_settings).
SPECTACULAR_SETTINGS = spectacular_settings()

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"one_line_warning": {"()": "config.log_filters.OneLineWarning"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    # A request whose Host is not in ALLOWED_HOSTS (a scan, a stale DNS name): one warning line,
    # not an ERROR with a traceback per request.
    "loggers": {"django.security.DisallowedHost": {"filters": ["one_line_warning"]}},
}
