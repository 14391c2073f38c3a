"""What the Jupyter Server relay remembers between requests: discovery lookups (records.py)
and idle connections to kernel servers (pool.py)."""

from __future__ import annotations

import socket

import pytest
from tornado.iostream import IOStream

from mcp_notebook import discovery
from mcp_notebook.serverext import pool, records
from tests.waiting import until


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    monkeypatch.setenv(discovery.RUNTIME_DIR_ENV, str(tmp_path))
    searched: list[str] = []
    search = records.search

    def counting(name: str) -> discovery.ServerRecord:
        searched.append(name)
        return search(name)

    monkeypatch.setattr(records, "search", counting)
    return searched


def test_a_lookup_is_remembered_until_the_folder_changes(runtime):
    known = records.Records()
    path = discovery.register("n", "http://127.0.0.1:1/mcp", "t1", max_body=10, idle_timeout=4)
    try:
        first = known.find("n")
        assert (first.url, first.max_body, first.idle_timeout) == (
            "http://127.0.0.1:1/mcp",
            10,
            4.0,
        )
        assert known.find("n") == first
        assert runtime == ["n"]  # the folder was read once
        # The server restarts on another port: it writes its file anew.
        discovery.register("n", "http://127.0.0.1:2/mcp", "t2")
        assert (known.find("n").url, known.find("n").token) == ("http://127.0.0.1:2/mcp", "t2")
        assert runtime == ["n", "n"]
        known.forget("n")  # the relay could not connect: look again
        known.find("n")
        assert runtime == ["n", "n", "n"]
    finally:
        discovery.unregister(path)
    with pytest.raises(discovery.NotFound):
        known.find("n")  # its file is gone


def test_a_lookup_is_remembered_for_a_few_seconds_at_most(runtime):
    now = [0.0]
    known = records.Records(clock=lambda: now[0])
    path = discovery.register("n", "http://127.0.0.1:1/mcp", "t")
    try:
        known.find("n")
        now[0] += records.TTL - 0.1
        known.find("n")
        assert runtime == ["n"]
        now[0] += 0.2
        known.find("n")
        assert runtime == ["n", "n"]
    finally:
        discovery.unregister(path)


def test_a_server_that_does_not_say_its_idle_timeout_is_kept_for_the_default():
    assert pool.keep_for(None) == pool.KEEP_IDLE
    assert pool.keep_for(4.0) == 2.0  # well before the server closes it itself
    assert pool.keep_for(600.0) == pool.KEEP_IDLE


async def pair() -> tuple[IOStream, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0))
    client = IOStream(socket.socket())
    await client.connect(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    return client, server


async def test_the_pool_gives_back_open_connections_and_drops_closed_or_expired_ones():
    now = [0.0]
    connections = pool.Pool(clock=lambda: now[0])
    key = ("127.0.0.1", 1)
    (a, a_peer), (b, b_peer), (c, c_peer) = [await pair() for _ in range(3)]
    try:
        connections.give(key, a, keep=10)
        connections.give(key, b, keep=10)
        assert connections.take(key) is b  # the most recently used first
        connections.give(key, b, keep=10)
        b_peer.close()  # the kernel closed it: told by a peek, never used
        assert connections.take(key) is a
        assert b.closed()
        assert connections.take(key) is None
        c_peer.sendall(b"HTTP/1.1 200 OK\r\n")  # bytes nobody asked for: not reusable
        connections.give(key, c, keep=10)
        assert c.closed() and connections.idle(key) == 0
        connections.give(key, a, keep=10)
        now[0] += 11
        assert connections.take(key) is None and a.closed()  # kept for too long
    finally:
        for stream in (a, b, c):
            stream.close()
        for peer in (a_peer, b_peer, c_peer):
            peer.close()


async def test_the_pool_keeps_few_connections_and_closes_expired_ones_by_itself():
    connections = pool.Pool()
    key = ("127.0.0.1", 1)
    made = [await pair() for _ in range(pool.IDLE_PER_KERNEL + 1)]
    try:
        for stream, _ in made:
            connections.give(key, stream, keep=0.05)
        assert connections.idle(key) == pool.IDLE_PER_KERNEL
        assert made[0][0].closed()  # the oldest made room
        await until(lambda: connections.idle(key) == 0, "the pool's sweep")
        assert all(stream.closed() for stream, _ in made)
    finally:
        for stream, peer in made:
            stream.close()
            peer.close()
