"""What a fleet of hosts shares through Redis: the second tier (docs/fleet.md).

``store`` the parts below on one Redis client; ``entry`` app entries and backoff encoded (pure);
``entries`` them read and shared; ``claims`` the claim on an app's next GitHub request;
``history`` each app's release history; ``controls`` the release controls a poller last read;
``key_reads`` keys read in one round trip; ``guarded_writes`` newer-time-wins writes; ``errors``
``RedisTrouble``; ``due`` early refreshes; ``connection``/``options`` the poller's own client;
``trouble`` the Redis trouble log.
"""
