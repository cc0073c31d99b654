"""The poller: keeps every app's release fresh on this host, alone or with the fleet.

- ``schedule``: when to ask GitHub (freshness, retries after failures, the backoff after a round).
- ``poller``: one tick (``Poller``): what is due, the fleet's entries and claims, each answer kept
  in memory, written to the host's state file and shared through Redis.
- ``history``: what an answer does to an app's release history (the latest seen, the list).
- ``controls_relay``: the release controls shared with the fleet, and kept for a host whose
  web processes can't read the site's database yet.
- ``requests``: the refreshes asked for ahead of schedule this poller knows of, app by app.
- ``wakeup``: the wait between ticks, looking every second whether a refresh was asked for.
- ``drops``: what an answer dropped or said (assets, a rename, a 404), warned once and recorded.
- ``updater``: each release's Tauri updater files, read once per release and kept with it.
- ``tally``: what each tick adds to the host's counters, and what ``--once`` exits with.
- ``loop``: the settings' parts (``build_poller_parts``) and the loop while the lease is held.
- ``process``: the process around it (``PollerRunner``): the lease, standing by, a clean stop.
- ``stopping``: SIGTERM and SIGINT: the first stops gracefully, a second at once.

It asks its release source through ``craft_apps.kernel.source`` only (GitHub is handed in by
``poll_craft_releases``), writes the host's state file and the fleet's Redis, and never imports
the HTTP side.
"""
