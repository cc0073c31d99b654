"""craft_apps: the latest release of every Craft App, polled from GitHub once per fleet."""

# The one place the version is written: pyproject.toml reads it (setuptools' dynamic version),
# ``poll_craft_releases --version`` prints it.
__version__ = "0.2.0"
