"""craft_apps: the latest release of every Craft App, polled from GitHub once per fleet."""
