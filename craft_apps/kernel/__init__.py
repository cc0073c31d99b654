"""The pure kernel: the types, rules and codecs every tier shares, with no Django and no I/O.

``compat`` what Python 3.11 added, for 3.10; ``domain`` the shared types and their rules;
``instants`` times (ms inside, RFC 3339 outside); ``clock`` time as a dependency; ``codec``
a release's JSON for both stores; ``versions`` a tag read as a version and which is newest;
``signing`` the Ed25519 signature and its reference verifier; ``controls`` hold, yank and
rollout, their check and their codec; ``policies`` each app's release policy; ``guard`` a guarded
rollout's next step or pause from its install counts; ``serving``
what each channel serves each app; ``tauri_updates`` what the Tauri updater endpoint offers;
``text`` outside text made one line; ``source`` what the poller asks of a release source.
See docs/architecture.md.
"""
