"""craft_apps: the latest release of every Craft App, polled from GitHub once per fleet.

Tiers: ``github`` asks GitHub, ``polling`` the poller, ``host`` the host's state file, ``fleet``
what hosts share through Redis, ``api`` what launchers, people and operators fetch, ``content``
what operators edit, ``controls`` the release controls and policies, ``cdn`` the CDN purge,
``reports`` install reports, ``ops`` ``craft_apps_status``, ``management`` the commands,
``testing`` a fake GitHub and clock, ``tauri`` the Tauri updater's files and offer; beneath them
``kernel``, pure rules (no Django, no I/O). Also ``apps``, ``models``, ``admin``, ``urls``,
``checks``, ``conf`` (every setting), ``install_example``. See docs/architecture.md.
"""

# The one place the version is written: pyproject.toml reads it (setuptools' dynamic version),
# docs/conf.py shows it, ``poll_craft_releases --version`` prints it; the example Dockerfile and
# the Kubernetes manifests (examples/deploy) name it, and tests/test_version.py checks they do.
__version__ = "0.2.0"
