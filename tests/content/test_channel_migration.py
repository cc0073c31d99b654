"""The migration from the ``beta`` column to ``channels``, both ways, on the test database: an
app with beta on is served on beta after it, and after going back."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

Node = tuple[str, str]


def nodes() -> tuple[Node, Node, list[Node]]:
    """The channels migration, the one before it and the app's latest (found by name, so a
    renumbering at a merge doesn't matter)."""
    graph = MigrationExecutor(connection).loader.graph
    [moved] = [n for n in graph.nodes if n[0] == "craft_apps" and n[1].endswith("_app_channel_channels")]
    [before] = [p for p in graph.node_map[moved].parents if p.key[0] == "craft_apps"]
    return moved, before.key, graph.leaf_nodes("craft_apps")


def at(target: Node) -> Any:
    """The app channel model as the database is after migrating to ``target``."""
    executor = MigrationExecutor(connection)
    executor.migrate([target])
    return (
        MigrationExecutor(connection)
        .loader.project_state([target])
        .apps.get_model("craft_apps", "AppChannel")
    )


@pytest.mark.django_db(transaction=True)
def test_beta_becomes_the_channels_list_and_back():
    moved, before, latest = nodes()
    try:
        old = at(before)
        old.objects.create(app_key="photocraft", beta=True)
        old.objects.create(app_key="paintcraft", beta=False)
        new = at(moved)
        assert {row.app_key: row.channels for row in new.objects.all()} == {
            "photocraft": ["beta"],
            "paintcraft": [],
        }
        new.objects.filter(app_key="paintcraft").update(channels=["beta"])
        new.objects.filter(app_key="photocraft").update(channels=[])
        old = at(before)
        assert {row.app_key: row.beta for row in old.objects.all()} == {
            "photocraft": False,
            "paintcraft": True,
        }
    finally:
        MigrationExecutor(connection).migrate(latest)
