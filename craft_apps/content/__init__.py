"""What operators edit in the Django admin: renames, notices, channels and release controls.

``models`` the tables; ``items`` the served shapes (no Django); ``feed`` what a web process
serves, read at most once a second, and ``pacer`` its timing; ``channels`` channel settings and
control queries; ``served_versions`` each process's served version; ``policy_models`` release
policies; ``transfer`` export and import. The release controls' rules and form are in
``craft_apps.controls``.
See docs/renames-and-notices.md, docs/channels.md and docs/controls.md.
"""
