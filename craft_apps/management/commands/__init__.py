"""The commands operators run (``python manage.py <name>``).

- ``poll_craft_releases``: the poller, beside the web workers on every host (``--once``: a round).
- ``craft_apps_status``: what the host knows (``--json``, ``--check`` for health).
- ``craft_apps_refresh``: asks for a refresh of apps now, as a webhook delivery does.
- ``craft_apps_notices``: the renames and notices exported or imported, all or nothing.
- ``craft_apps_keys``: a new signing key pair, or the configured keys' public halves and ids.
- ``craft_apps_verify``: fetches an answer and checks its signature as a launcher would.
"""
