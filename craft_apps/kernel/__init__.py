"""The pure kernel: the types, rules and codecs every tier shares, with no Django and no I/O.

``compat`` Python 3.11's additions for 3.10; ``domain`` shared types; ``instants`` times;
``clock`` time as a dependency; ``codec`` a release's JSON; ``versions`` tags as versions;
``signing`` the Ed25519 signature; ``serving`` what each channel serves (with the release
controls' pure rules, ``craft_apps.controls``); ``links`` which links may be served; ``text``
one-line text; ``source`` what the poller asks of a release source. See docs/architecture.md.
"""
