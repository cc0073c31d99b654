"""The host's private state file (``store``, SQLite) and the lease (``lease``) that lets one poller
per state directory write it, with the poller's counters (``counters``) and what it didn't serve
(``drops``) beside them. The second tier, per host: the poller writes it, every web worker
reads it."""
