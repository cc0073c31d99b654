"""Renames and notices that operators edit in the Django admin and launchers receive.

``items`` the served shapes and the publish-window rule (no Django); ``models`` the tables,
their validation and the version marker every write bumps; ``feed`` what one web process
serves, looked up at most once a second (with the channel settings); ``channels`` which apps
have their beta channel on, for the feed and the poller; ``transfer`` the JSON export and
import.
"""
