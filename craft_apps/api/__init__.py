"""The HTTP side: what launchers, people and operators fetch, and the webhook GitHub posts to.

The endpoint: ``answer`` what it lists, ``serializers`` and ``schema`` the contract and its
OpenAPI names, ``validators`` the ETag and ``If-None-Match``, ``negotiation``
``Accept-Encoding``, ``representation`` the kept bytes in each coding (and the brotli
``Refiner``), ``caching`` how long each answer may be kept, ``answer_cache`` the answer kept per
state version and channel, ``channels`` the ``?channel=`` parameter and the beta channel's
answer, ``controls`` the release controls applied to a channel's answer, ``views`` the HTTP
answers. Tauri apps' own updater: ``tauri`` its endpoint, ``tauri_answers`` its answers kept.
Private apps: ``private_links`` their links made this server's, ``private_assets`` the view
that redirects to GitHub's short-lived URL of a file.
People: ``downloads`` the download links (the one
"which file" rule), ``platforms`` the visitor's system, ``pages`` the downloads page and
``page_cache`` its rendered pages. Operators: ``health`` and ``metrics`` (with
``policy_metrics``, the releases a release policy keeps back); ``guard_watch`` the
once-a-second check that steps or pauses guarded rollouts; ``schema_views`` the schema-only
DRF faces of the plain views (health, metrics, the webhook); ``docs_settings`` the
docs' drf-spectacular settings a site imports. GitHub: ``webhook`` its deliveries, ``refresh``
the marks a delivery (and ``craft_apps_refresh``) writes.
``runtime`` holds what one web process keeps between requests (the clock, one store per state
directory, the caches, the notices feed): every view asks it; ``startup`` the middleware that
starts its background work when the process starts.

What it reads: the host's state file (every GET; at most once per 0.1 s for the endpoint) and
the renames and notices in the site's database (``craft_apps.content.feed``, in a background
thread, never on the request path); ``metrics`` also the prometheus multiprocess directory.
A private app's file (``private_assets``) is the one request that asks GitHub: once per file
per minute.
Only the webhook writes, and it is the one place that talks to Redis: a verified delivery marks
its apps due on the host's state file and, with coordination, in the fleet's Redis. No
polling.
"""
