"""The host's private state file (SQLite): the poller writes it, every web worker reads it.

``database`` opens it and runs transactions (``connections``: each thread's), ``schema`` checks
it and makes it whole; ``store`` is what the other tiers use (``writer``: its write transactions);
``app_rows``, ``history_rows`` and ``lease_rows`` are the rows of apps and backoff, of histories
and of the lease; ``lease`` keeps one active poller per state directory (``lease_table`` its row,
``remake`` a deleted file made anew); ``counters``, ``drops`` and ``due`` hold the poller's numbers,
what it refused and early refreshes; ``observe`` reads it all for operators, ``health`` judges it.
"""
