"""Purge backends: one class per kind of CDN, chosen by ``CDN_PURGE_KIND``.

``base`` holds what each does; ``http`` (``PURGE`` or ``BAN``) and ``cloudflare`` are the two
named in ``conf.PURGE_BACKENDS``. A new CDN is one ``base.PurgeBackend`` subclass in a module
of its own, named by its dotted path (docs/cdn.md, "Another CDN").
"""

from __future__ import annotations

from collections.abc import Iterable

from craft_apps.cdn.backends.base import PurgeBackend
from craft_apps.cdn.plan import PurgeRequest
from craft_apps.conf import PurgeTarget, purge_backend


def backend_named(path: str) -> PurgeBackend:
    """The backend whose class ``path`` names (checked when the settings were read)."""
    backend: PurgeBackend = purge_backend(path)
    return backend


def requests_for(target: PurgeTarget, paths: Iterable[str]) -> tuple[PurgeRequest, ...]:
    """The requests that drop ``paths`` on ``target``'s CDN; none for no path."""
    paths = tuple(paths)
    return backend_named(target.backend).requests(target, paths) if paths else ()
