"""``python -m PACKAGE --transport http`` says it is running only once it serves: from then
on, a stop (Ctrl-C, Ctrl+Break, a closed console) finds its handlers in place."""

from __future__ import annotations

import asyncio

from mcp_notebook.export import http, runtime


def test_an_export_is_running_only_while_its_loop_serves(monkeypatch):
    app = runtime.exported_app("serving", {})
    seen: list[tuple[str, bool]] = []

    def serve(asgi, sockets, *, on_loop, verbose):
        seen.append(("before the loop", app.status()["running"]))
        loop = asyncio.new_event_loop()
        try:
            undo = on_loop(loop)
            seen.append(("on the loop", app.status()["running"]))
            assert app.status()["url"].startswith("http://127.0.0.1:")
            undo()
            seen.append(("after the loop", app.status()["running"]))
        finally:
            loop.close()
            for sock in sockets:
                sock.close()

    monkeypatch.setattr(http, "serve", serve)
    assert runtime.main(app, ["--transport", "http", "--port", "0", "--no-auth"]) == 0
    assert seen == [("before the loop", False), ("on the loop", True), ("after the loop", False)]
    assert app.status()["running"] is False
