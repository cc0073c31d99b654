"""Renames and notices that operators edit in the Django admin and launchers receive.

``items`` the served shapes and the publish-window rule (no Django); ``models`` the tables,
their validation and the version marker every write bumps; ``feed`` what one web process
serves, looked up at most once a second (with the channel settings); ``channels`` which apps
have their beta channel on and the release controls, for the feed and the poller;
``kept_controls`` the controls last read, kept in the state directory for a process that
can't read the database yet; ``transfer`` the JSON export and
import.
"""
