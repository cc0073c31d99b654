"""craft_apps: the latest release of every Craft App, polled from GitHub once per fleet.

The tiers, each a subpackage (``tests/test_layers.py`` pins which may import which): ``github``
asks GitHub; ``host`` the host's private state file; ``fleet`` what hosts share through Redis;
``polling`` the poller; ``api`` what launchers, people and operators fetch, and the webhook;
``content`` what operators edit in the admin (renames, notices, channels, release controls
and policies); ``cdn`` the purge of a CDN's copy when an answer changes; ``reports`` the install
reports launchers send after an update and their counts;
``ops`` what ``craft_apps_status`` reports; ``management`` the commands; ``testing`` the GitHub
stand-in and fake clock of the tests, the demo and the benchmarks (in the wheel too).
Beneath them, ``kernel`` the pure rules and types every tier shares (no Django, no I/O).
At the top only what Django looks for by name (``apps``, ``models``, ``admin``, ``urls``,
``checks``, ``migrations``), ``conf`` every setting, and ``install_example``, which applies the
install snippet to a new site. The rest: docs/architecture.md.
"""

# The one place the version is written: pyproject.toml reads it (setuptools' dynamic version),
# docs/conf.py shows it, ``poll_craft_releases --version`` prints it; the example Dockerfile and
# the Kubernetes manifests (examples/deploy) name it, and tests/test_version.py checks they do.
__version__ = "0.2.0"
