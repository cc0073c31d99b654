"""craft_apps: the latest release of every Craft App, polled from GitHub once per fleet.

The tiers, each a subpackage (``tests/test_layers.py`` pins which may import which): ``github``
asks GitHub and reads its answers safely; ``host`` the host's private state file; ``fleet`` what
hosts share through Redis; ``polling`` the poller; ``api`` what launchers, people and operators
fetch, and the webhook; ``notices`` the renames, notices, channel settings and release
controls edited in the admin; ``ops`` what
``craft_apps_status`` reports; ``management`` the commands; ``testing`` the GitHub stand-in
and fake clock the tests, the demo and the benchmarks run on (not in the wheel).

Beneath them: ``domain`` the shared types and their rules, ``source`` what the poller asks of a
release source, ``instants`` times, ``codec`` a release's stored JSON, ``clock`` time as a
dependency, ``text`` outside text made one line, ``compat`` what Python 3.11 added (for 3.10),
``signing`` the answer's Ed25519 signature and its verifier, ``versions`` which release is
newest by version precedence (the beta channel), ``controls`` the operators' hold, yank and
staged rollout (the rule and its check), ``conf`` every setting, ``checks``
every system check. Where Django looks: ``apps``, ``models``, ``admin``, ``urls`` (and
``migrations``). ``install_example`` applies the install snippet to a new site.
"""

# The one place the version is written: pyproject.toml reads it (setuptools' dynamic version),
# ``poll_craft_releases --version`` prints it.
__version__ = "0.2.0"
