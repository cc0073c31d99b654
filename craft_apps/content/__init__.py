"""What operators edit in the Django admin: renames, notices, channels and release controls.

``models`` the tables and the version marker every write bumps; ``items`` the served shapes and
the publish-window rule (no Django); ``feed`` what one web process serves, read at most once a
second; ``pacer`` the feed's beat; ``channels`` the channel settings and the release controls,
for the feed and the poller; ``kept_controls`` the controls kept in the state directory for a
process that can't read the database yet; ``served_versions`` which version each web process
serves, for the CDN purge; ``policy_models`` each app's release policy;
``transfer`` the JSON export and import; ``control_form`` the admin's form of a control.
See docs/renames-and-notices.md, docs/channels.md and docs/controls.md.
"""
