"""The pure kernel: the types, rules and codecs every tier shares, with no Django and no I/O.

``compat`` Python 3.11's additions for 3.10; ``domain`` shared types; ``instants`` times;
``clock`` time as a dependency; ``codec`` a release's JSON; ``versions`` tags as versions;
``signing`` the Ed25519 signature; ``controls`` hold, yank, rollout (``actions`` one class
each); ``policies`` release policies; ``guard`` a guarded rollout's step or pause; ``serving``
what each channel serves; ``links`` which links may be served; ``text`` one-line text;
``source`` what the poller asks of a release source. See docs/architecture.md.
"""
