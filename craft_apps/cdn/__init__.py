"""Purge on change: the poller holding the lease asks the CDN to drop an answer that changed.

- ``plan``: which URLs changed, and the request that drops one (pure).
- ``backends``: one class per kind of CDN (HTTP ``PURGE``/``BAN``, Cloudflare), chosen by name
  or dotted path: the requests that drop the changed URLs, their token, their outcome.
- ``sender``: one purge request over HTTP, with its timeout; the token is added here only.
- ``guard``: a Redis key per change, so one poller of the fleet purges it, not every host.
- ``purger``: the thread that looks at the answers, purges what changed with retries and
  backoff, each URL on its own, and records the outcome in the host's state file.
- ``jobs``: the few threads the purge requests are sent on, side by side.
- ``readiness``: when a change may be purged: once every web process of the host says it
  serves it (``content.served_versions``), at most 2 s after it was seen.
- ``fleet_serving``: the lowest version each host serves, shared through Redis, so the purge
  waits for the other hosts too.
- ``wiring``: that thread made from the settings, reading the answers through a runtime.

It reads the answers as a web process makes them (``api.runtime``), so it sits above the HTTP
side and the poller, and is started by ``poll_craft_releases``. See docs/cdn.md.
"""
