"""Fixtures for the GitHub client tests: scriptable local TCP servers, each stopped after its test
(the server and GitHub's release JSON are in tests/github/support.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.github.support import Script, ScriptedServer


@pytest.fixture
def scripted_server() -> Iterator[Callable[..., ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(script: Script, tls: bool = False) -> ScriptedServer:
        server = ScriptedServer(script, tls=tls)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
