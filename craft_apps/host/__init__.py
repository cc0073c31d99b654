"""The host's private state file and what is kept in it: the second tier, per host. The poller
writes it, every web worker reads it.

- ``database``: the one way into the file (opening it, never creating it nor following a link,
  a connection per thread, fork safety, transactions, the file's identity, ``StateUnavailable``).
- ``schema``: its tables and format checks, the columns added in place since format 1, and
  making the file whole (built aside, then linked into place).
- ``store``: ``StateStore``, what the rest of the package uses: the fenced writes and one
  consistent read of what the endpoint serves.
- ``app_rows``: the rows of each app's latest release and of the host's backoff.
- ``history_rows``: the rows of each app's release history (its recent releases, newest first).
- ``lease_rows``: the lease table's statements and the ``Fence`` every write carries.
- ``lease``: one active poller per state directory (when to take, renew, lose and release).
- ``counters``: the poller's numbers, for every web worker to show the same.
- ``drops``: what the poller refused or was told about each app's release.
- ``due``: refreshes asked for ahead of schedule, and the webhook deliveries taken.
- ``observe``: everything an operator may ask of the file, read in one call.
- ``health``: the host's health rules, as pure functions of what ``observe`` read.
"""
