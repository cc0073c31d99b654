"""The production site: config/settings.py's apps, middleware, templates and logging, without the
demo's defaults. The secret key, the host names and the database come from the environment and
the site refuses to start (ImproperlyConfigured, one line naming the variable) without them:

- ``DJANGO_SECRET_KEY``: 50 characters or more, not the demo's or the examples' placeholder;
- ``DJANGO_ALLOWED_HOSTS``: comma separated (the examples' probes send ``Host: localhost``);
- ``DATABASE_URL``: ``postgresql://user:password@host:5432/name[?sslmode=require]``, the site
  database every host and pod shares (renames, notices, the admin's users);
- ``DJANGO_CSRF_TRUSTED_ORIGINS``: optional, comma separated (``https://craft-apps.example.com``),
  for the admin behind a proxy that terminates TLS;
- ``CRAFT_APPS_REDIS_URL``: optional, the fleet's Redis (as in the demo settings);
- every ``CRAFT_APPS_*`` variable craft_apps reads itself. See docs/deployment.md.
"""

from __future__ import annotations

import os

from config import environment
from config.settings import (
    ASGI_APPLICATION,
    BASE_DIR,
    CACHES,
    DEFAULT_AUTO_FIELD,
    INSTALLED_APPS,
    LOGGING,
    REST_FRAMEWORK,
    ROOT_URLCONF,
    SPECTACULAR_SETTINGS,
    STATIC_URL,
    TEMPLATES,
    TIME_ZONE,
    USE_TZ,
    WHITENOISE_USE_FINDERS,
    WSGI_APPLICATION,
)
from config.settings import (
    MIDDLEWARE as DEMO_MIDDLEWARE,
)

__all__ = [
    "ALLOWED_HOSTS",
    "ASGI_APPLICATION",
    "BASE_DIR",
    "CACHES",
    "CSRF_COOKIE_SECURE",
    "CSRF_TRUSTED_ORIGINS",
    "DATABASES",
    "DEBUG",
    "DEFAULT_AUTO_FIELD",
    "INSTALLED_APPS",
    "LOGGING",
    "MIDDLEWARE",
    "REST_FRAMEWORK",
    "ROOT_URLCONF",
    "SECRET_KEY",
    "SESSION_COOKIE_SECURE",
    "SILENCED_SYSTEM_CHECKS",
    "SPECTACULAR_SETTINGS",
    "STATIC_URL",
    "TEMPLATES",
    "TIME_ZONE",
    "USE_TZ",
    "WHITENOISE_USE_FINDERS",
    "WSGI_APPLICATION",
]

SECRET_KEY = environment.secret_key(os.environ)
DEBUG = False  # never from the environment: a production site never shows tracebacks
ALLOWED_HOSTS = environment.allowed_hosts(os.environ)
CSRF_TRUSTED_ORIGINS = environment.csrf_trusted_origins(os.environ)
DATABASES = {"default": environment.database(os.environ)}
# The admin's cookies only over HTTPS (TLS ends at the load balancer or the host's nginx).
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
# The admin's pages are never framed by another site.
MIDDLEWARE = [*DEMO_MIDDLEWARE, "django.middleware.clickjacking.XFrameOptionsMiddleware"]
# HTTPS redirects and HSTS belong where TLS ends (the load balancer, the host's nginx): the
# probes and the pod's own nginx speak plain HTTP to gunicorn, and a redirect there would fail
# every probe. `manage.py check --deploy` is otherwise clean (tests/deploy/test_production.py).
SILENCED_SYSTEM_CHECKS = ["security.W004", "security.W008"]
