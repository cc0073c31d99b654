"""Kept so that settings written from the 0.1 README (``from craft_apps.redis_options import
poller_cache``) keep working; the alias options live in :mod:`craft_apps.fleet.options`."""

from craft_apps.fleet.options import poller_cache

__all__ = ["poller_cache"]
