"""What a fleet of hosts shares through Redis: the per-app entries and their encoding (``entry``),
the guarded writes (``store``, ``guarded_write.lua``), the poller's own connection (``connection``,
``options``) and what happens when Redis is in trouble (``trouble``). The second tier, per fleet."""
