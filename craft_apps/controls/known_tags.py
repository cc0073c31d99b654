"""The release controls against what this host knows (``kernel.serving`` applies them to an answer).

``known_tags`` is the tags the host knows of each app: a control naming another is kept and
applied the moment its release appears, and the admin, the import, the status and the metrics
say it waits for its release (``rules.waiting``, ``rules.tag_known``). See docs/controls.md.
"""

from __future__ import annotations

from craft_apps.host.store import StateSnapshot


def known_tags(snapshot: StateSnapshot) -> dict[str, frozenset[str]]:
    """The tags this host knows of each app it knows a release of: its latest release's and
    its history's."""
    found: dict[str, frozenset[str]] = {}
    for key, state in snapshot.apps.items():
        tags = {release.tag for release in snapshot.history.get(key, ())}
        if state.latest_release is not None:
            tags.add(state.latest_release.tag)
        found[key] = frozenset(tags)
    return found
