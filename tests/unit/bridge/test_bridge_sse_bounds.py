"""The bridge's reading of a server's SSE stream is bounded per message.

A server (here a plain HTTP server on loopback standing in for a hostile or broken
notebook) answers a POST with one 200 MB SSE event made of short ``data:`` lines, or a
line that never ends. The bridge's link (bridge/link.py) used to gather it all (+191 MiB,
many small strings); now it stops at 64 MiB of data and the request gets a clear error.
"""

from __future__ import annotations

import http.server
import threading
import tracemalloc
from collections.abc import Iterator

import pytest

from mcp_notebook.bridge.link import Link, read_reply
from mcp_notebook.bridge.sse import MAX_EVENT_BYTES, EventTooLarge, SseReader

MIB = 1024 * 1024
EVENT = 200 * MIB
LINE = b"data: " + b"x" * 250 + b"\n"


class Streamer(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    endless_line = False

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(b"id: s.1\nevent: message\n")
            chunk = (b"y" * 65536) if self.endless_line else LINE * 256
            for _ in range(EVENT // len(chunk)):
                self.wfile.write(chunk)
            self.wfile.write(b"\n\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the bridge gave up on the event: what it should do

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Streamer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    Streamer.endless_line = False


@pytest.mark.parametrize("endless_line", [False, True], ids=["short-lines", "one-line"])
def test_a_huge_sse_event_is_refused_within_the_bound(server, endless_line: bool) -> None:
    Streamer.endless_line = endless_line
    link = Link(f"http://127.0.0.1:{server.server_address[1]}/mcp", None)
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}'
    tracemalloc.start()
    try:
        reply = link.request("POST", body, link.headers(None, "text/event-stream"))
        with pytest.raises(EventTooLarge, match="longer than 64 MiB"):
            read_reply(reply, 1, lambda message: None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        link.close()
    assert peak < MAX_EVENT_BYTES + 32 * MIB, f"the bridge held {peak / MIB:.0f} MiB at once"


def test_events_within_the_bound_keep_their_lines() -> None:
    reader = SseReader(max_bytes=200)
    for line in (b"id: a.1", b"data: one", b"data:two"):
        assert reader.feed_line(line) is None
    assert reader.feed_line(b"") == ("a.1", "one\ntwo")
    assert reader.feed_line(b": keep-alive") is None
    reader.feed_line(b"data: " + b"z" * 110)
    with pytest.raises(EventTooLarge, match="longer than 200 bytes"):
        reader.feed_line(b"data: more")  # each line counts what it costs besides its bytes
    assert reader.feed_line(b"") is None  # what was cut is gone; the next event is read
    reader.feed_line(b"data: {}")
    assert reader.feed_line(b"") == (None, "{}")
