"""Each thread's connections and the writer's check, on their own."""

from __future__ import annotations

import sqlite3
import threading

from craft_apps.host.connections import ThreadConnections
from craft_apps.host.store import StateStore


def test_a_thread_keeps_one_connection_of_each_kind(store: StateStore) -> None:
    connections = ThreadConnections()
    reader, writer = sqlite3.connect(store.path), sqlite3.connect(store.path)
    connections.keep(reader, (1, 2, 3), writable=False)
    connections.keep(writer, (1, 2, 3), writable=True)
    held = connections.held(writable=False)
    assert held is not None and held.db is reader and held.file_id == (1, 2, 3)
    connections.close_current_thread()
    assert connections.held(writable=False) is None and connections.held(writable=True) is None


def test_the_connections_of_ended_threads_are_closed_when_the_next_is_kept(store: StateStore) -> None:
    connections = ThreadConnections()
    theirs: list[sqlite3.Connection] = []

    def keep_one() -> None:
        theirs.append(sqlite3.connect(store.path, check_same_thread=False))
        connections.keep(theirs[0], (1, 2, 3), writable=False)

    thread = threading.Thread(target=keep_one)
    thread.start()
    thread.join()
    connections.keep(sqlite3.connect(store.path), (1, 2, 3), writable=False)
    try:
        theirs[0].execute("SELECT 1")
        closed = False
    except sqlite3.ProgrammingError:
        closed = True
    assert closed
    connections.close()


def test_the_writer_writes_only_to_the_file_it_checked(store: StateStore) -> None:
    assert store.writer.connection(writable=True) is not None
    assert store.writer.write(lambda db: db.execute("SELECT 1").fetchone()) == (1,)
    store.close()
    assert store.writer.connection(writable=True) is None, "forgotten at close: check it again"
    assert store.writer.write(lambda db: db.execute("SELECT 2").fetchone()) == (2,)
