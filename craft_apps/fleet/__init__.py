"""What a fleet of hosts shares through Redis; the second tier, per fleet.

- ``entry``: the per-app entries and the backoff, their keys, fields and encoding (pure).
- ``store``: reading them (and the histories) in one round trip, and the guarded writes
  (``guarded_write.lua``, or WATCH/MULTI/EXEC where scripts are refused); ``redis_trouble``,
  the one rule that turns what redis-py raises into ``RedisTrouble``.
- ``history``: each app's release history, its own key per app beside the entries (pure).
- ``controls``: the operators' release controls as a poller last read them, one key (pure).
- ``due``: refreshes asked for ahead of schedule and the webhook deliveries taken.
- ``connection``: the poller's own Redis client from a django-redis alias, and its checks.
- ``options``: the cache OPTIONS that alias needs (``poller_cache``).
- ``trouble``: the Redis trouble log, warned when it starts and at most every 10 minutes.
"""
