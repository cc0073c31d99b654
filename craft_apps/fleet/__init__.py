"""What a fleet of hosts shares through Redis; the second tier, per fleet.

- ``store``: ``SharedStore``, the parts below on one Redis client, for one poller.
- ``entry``: the per-app entries and the backoff, their keys, fields and encoding (pure).
- ``entries``: reading them in one round trip (only what moved) and sharing a poll's outcome.
- ``claims``: the claim on each app's next GitHub request, so one host asks at a time.
- ``history``: each app's release history, its own key per app beside the entries.
- ``controls``: the operators' release controls as a poller last read them, one key.
- ``key_reads``: reading keys in one round trip; why a key couldn't be read, logged once.
- ``guarded_writes``: the newer-time-wins writes (``guarded_write.lua``, or WATCH/MULTI/EXEC
  where scripts are refused).
- ``errors``: ``RedisTrouble`` and ``redis_trouble``, the one rule that turns what redis-py
  raises into it.
- ``due``: refreshes asked for ahead of schedule and the webhook deliveries taken.
- ``connection``: the poller's own Redis client from a django-redis alias, and its checks.
- ``options``: the cache OPTIONS that alias needs (``poller_cache``).
- ``trouble``: the Redis trouble log, warned when it starts and at most every 10 minutes.
"""
