"""A second front end on a test kernel, speaking the widget protocol as JupyterLab does.

It connects sockets of its own (plain zmq, read on a thread of its own), learns every
widget model from the kernel's iopub messages (``comm_open``, ``comm_msg`` updates,
``comm_close``), and sends clicks and edits back as ``comm_msg`` on the shell channel.
Tests assert on the state the kernel sent, that is, on what a browser would render.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import zmq
from jupyter_client.session import Session

from tests.waiting import until, wait_until

WIDGET = "jupyter.widget"
PREFIX = "IPY_MODEL_"
PANEL = "mcp_notebook.panel"  # the MCP panel's feed (ui/panelfeed.py)


class Frontend:
    """``lacks``: comm targets this front end closes a comm on at once, from its reader
    thread, as JupyterLab or VS Code do for a target nobody registered."""

    def __init__(self, kernel: Any, lacks: tuple[str, ...] = ()) -> None:
        manager = kernel.manager
        self.session = Session(
            key=manager.session.key,
            signature_scheme=manager.session.signature_scheme,
            username="frontend",
        )
        self.iopub = manager.connect_iopub()
        self.shell = manager.connect_shell()
        self._subscribed()
        self.models: dict[str, dict[str, Any]] = {}
        # Comms the kernel opened on other targets (not widgets): id -> (target, data).
        self.opened: dict[str, tuple[str, Any]] = {}
        # What the kernel sent on comms that are not widgets (ours included): id -> data.
        self.received: dict[str, list[Any]] = {}
        self.closed: set[str] = set()
        self.streams: list[str] = []  # the text of every stream message seen
        self.updates: Counter[tuple[str, str]] = Counter()  # (model id, key) -> updates
        self._lock = threading.Lock()
        self._shell_lock = threading.Lock()  # the reader thread sends too (``lacks``)
        self.lacks = lacks
        self.refused: list[str] = []  # the comms it closed for lack of their target
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _subscribed(self) -> None:
        """Wait until iopub reaches us (a SUB socket misses what is sent before that)."""

        def reached() -> bool:
            self.session.send(self.shell, "kernel_info_request", {})
            return bool(self.iopub.poll(500))

        wait_until(reached, "the kernel's iopub to reach the test front end", timeout=60)

    def close(self) -> None:
        self._stop.set()
        self._reader.join(5)
        self.iopub.close(linger=0)
        self.shell.close(linger=0)

    # -- from the kernel ---------------------------------------------------------------
    def _read(self) -> None:
        while not self._stop.is_set():
            if not self.iopub.poll(200):
                continue
            _, parts = self.session.feed_identities(self.iopub.recv_multipart(zmq.NOBLOCK))
            message = self.session.deserialize(parts)
            with self._lock:
                self._take(message)

    def _take(self, message: dict[str, Any]) -> None:
        kind, content = message["msg_type"], message["content"]
        if kind == "comm_open" and content.get("target_name") == WIDGET:
            self.models[content["comm_id"]] = dict(content["data"]["state"])
        elif kind == "comm_open":
            self.opened[content["comm_id"]] = (content["target_name"], content["data"])
            if content["target_name"] in self.lacks:
                self.close_comm(content["comm_id"])
                self.refused.append(content["comm_id"])
        elif kind == "comm_msg" and content["comm_id"] in self.models:
            data = content["data"]
            if data.get("method") in ("update", "echo_update"):
                self.models[content["comm_id"]].update(data["state"])
                for key in data["state"]:
                    self.updates[(content["comm_id"], key)] += 1
        elif kind == "comm_msg":
            self.received.setdefault(content["comm_id"], []).append(content["data"])
        elif kind == "comm_close":
            self.closed.add(content["comm_id"])
        elif kind == "stream":
            self.streams.append(content["text"])

    # -- reading the models ------------------------------------------------------------
    def state(self, model_id: str) -> dict[str, Any]:
        with self._lock:
            return dict(self.models[model_id])

    def find(self, model: str | None = None, css: str | None = None) -> list[str]:
        """Open models of a kind (``"Button"`` for ButtonModel) and/or with a CSS class."""
        with self._lock:
            return [
                model_id
                for model_id, state in self.models.items()
                if model_id not in self.closed
                and (model is None or state.get("_model_name") == f"{model}Model")
                and (css is None or css in state.get("_dom_classes", ()))
            ]

    def children(self, model_id: str) -> list[str]:
        return [c.removeprefix(PREFIX) for c in self.state(model_id).get("children", [])]

    def labels(self, select_id: str) -> list[str]:
        """A Select's option labels as a person reads them (no-break spaces as spaces)."""
        return [label.replace("\u00a0", " ") for label in self.state(select_id)["_options_labels"]]

    def one(self, model: str | None = None, css: str | None = None) -> str:
        found = self.find(model, css)
        assert len(found) == 1, f"{len(found)} open {model or ''} models with class {css}"
        return found[0]

    def panel(self, panel_id: str) -> dict[str, str]:
        """The parts of a confirmation panel: title, editor, approve, deny, note."""
        title, editor, row = self.children(panel_id)
        approve, deny, note = self.children(row)
        return {"id": panel_id, "title": title, "editor": editor, "approve": approve,
                "deny": deny, "note": note}  # fmt: skip

    def pending_panels(self) -> list[str]:
        """Confirmation panels whose buttons still work, oldest first."""
        return [
            p for p in self.find("VBox", "mcp-confirm")
            if not self.state(self.panel(p)["approve"]).get("disabled")
        ]  # fmt: skip

    # -- waiting -----------------------------------------------------------------------
    def new(self, model: str, css: str, before: set[str], timeout: float = 30) -> set[str]:
        """Models that were not in ``before``, once some arrived (iopub may lag the reply)."""
        return wait_until(
            lambda: set(self.find(model, css)) - before, f"a new {model} .{css}", timeout
        )

    async def until(self, check: Callable[[], Any], timeout: float = 30) -> Any:
        """Poll ``check`` without blocking the test's loop; its first truthy value."""
        return await until(check, f"{check} to hold", timeout)

    def open_monitor(self, kernel: Any) -> str:
        """Runs ``%mcp monitor`` in ``kernel``; the new monitor's box (a VBox)."""
        before = set(self.find("VBox", "mcp-monitor"))
        kernel.run("%mcp monitor")
        (box,) = self.new("VBox", "mcp-monitor", before)
        return box

    # -- the MCP panel's feed ---------------------------------------------------------
    def watch_calls(self) -> str:
        """Open the MCP panel's feed, as the JupyterLab extension does; its comm id. Its
        rows of calls arrive even while a cell holds the kernel (ui/hub.py)."""
        comm_id = self.open_comm(PANEL, {})
        wait_until(lambda: self.feed(comm_id, "snapshot"), "the panel feed's snapshot")
        return comm_id

    def feed(self, comm_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        """What the kernel sent on the panel feed ``comm_id`` (of one ``kind``)."""
        with self._lock:
            found = list(self.received.get(comm_id, []))
        return [m for m in found if kind is None or m.get("kind") == kind]

    def rows(self, comm_id: str) -> dict[int, dict[str, Any]]:
        """The latest row of each call the feed ``comm_id`` showed, by call id."""
        latest: dict[int, dict[str, Any]] = {}
        for message in self.feed(comm_id):
            for row in message.get("calls", []):
                latest[row["id"]] = row
        return latest

    def wait_for_call(self, comm_id: str, target: str, status: str) -> dict[str, Any]:
        """The row of a call to ``target`` once the feed shows it in ``status`` ("behind":
        queued behind a running cell, which the server marks as the call waits)."""

        def shown() -> list[dict[str, Any]]:
            rows = self.rows(comm_id).values()
            return [r for r in rows if r["target"] == target and r["status"] == status]

        try:
            return wait_until(shown, f"a call to {target} shown {status}")[-1]
        except AssertionError as missing:
            seen = [r["status"] for r in self.rows(comm_id).values() if r["target"] == target]
            raise AssertionError(f"{missing}; its calls were shown: {seen}") from None

    # -- to the kernel -----------------------------------------------------------------
    def _send(self, kind: str, content: dict[str, Any], subshell: str | None = None) -> None:
        header = self.session.msg_header(kind)
        if subshell is not None:
            header["subshell_id"] = subshell  # handled on that subshell's thread
        with self._shell_lock:
            self.session.send(self.shell, kind, content, header=header)

    def send(self, model_id: str, data: dict[str, Any], subshell: str | None = None) -> None:
        self._send("comm_msg", {"comm_id": model_id, "data": data}, subshell)

    def subshell(self, kernel: Any, op: str = "create", subshell_id: str = "") -> str:
        """Create a subshell (its id) or delete one, as JupyterLab does for a comm's."""
        control = kernel.manager.connect_control()
        try:
            content = {"subshell_id": subshell_id} if op == "delete" else {}
            self.session.send(control, f"{op}_subshell_request", content)
            assert control.poll(30_000), f"no {op}_subshell_reply in 30 s"
            _, parts = self.session.feed_identities(control.recv_multipart())
            reply = self.session.deserialize(parts)["content"]
        finally:
            control.close(linger=0)
        assert reply["status"] == "ok", reply
        return str(reply.get("subshell_id", subshell_id))

    def open_comm(self, target: str, data: dict[str, Any]) -> str:
        """Open a comm to the kernel, as a front end's extension does; its id."""
        comm_id = uuid.uuid4().hex
        content = {"comm_id": comm_id, "target_name": target, "data": data}
        self._send("comm_open", content)
        return comm_id

    def close_comm(self, comm_id: str) -> None:
        """Close a comm the kernel opened, as JupyterLab does one on a target it lacks."""
        self._send("comm_close", {"comm_id": comm_id, "data": {}})

    def click(self, button_id: str) -> None:
        self.send(button_id, {"method": "custom", "content": {"event": "click"}})

    def edit(self, model_id: str, **state: Any) -> None:
        self.send(model_id, {"method": "update", "state": state, "buffer_paths": []})
