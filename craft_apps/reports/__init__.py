"""Install reports: launchers and apps say how an update went, and the fleet counts them per
app, version and outcome (docs/reports.md).

- ``report``: one report read from a body, its fields and the error for a malformed one (pure).
- ``digest``: the keyed hashes of an install's id, which are kept instead of the id.
- ``limits``: the token buckets per install and per client address (in memory, bounded).
- ``counts``: the shapes of the counts, the retention bounds and what a store does.
- ``redis_counts``: the counts in the fleet's Redis (counters, HyperLogLogs, first-outcome marks).
- ``file_counts``: the counts in this host's state directory, without Redis.
- ``stores``: which of the two the settings name, and ``release_counts``, the one read.
- ``meters``: the Prometheus counters and the one log line per reason.
- ``intake``: the bounded queue and the writer thread that adds reports to the counts.
- ``view``: the ``POST /v1/craft_apps/reports`` endpoint.
- ``status``: what ``craft_apps_status`` shows of the counts.
- ``notify``: the webhook post (Slack-compatible) when a guarded rollout pauses.

It sits above the host's and the fleet's stores and below the HTTP side (``api.metrics``
registers its counters) and ``craft_apps_status``.
"""
