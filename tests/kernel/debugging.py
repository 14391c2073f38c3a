"""Drive a kernel's debugger (debugpy, in ipykernel) as JupyterLab's Debugger panel does.

Debug Adapter Protocol requests travel as ``debug_request`` messages on the control
channel; the debugger's events (``stopped``, ``continued``) come back as ``debug_event``
messages on IOPub.
"""

from __future__ import annotations

import itertools
from typing import Any

from tests.kernels import Kernel
from tests.waiting import read_until

DEADLINE = 60.0


class Debugger:
    def __init__(self, kernel: Kernel) -> None:
        self.client = kernel.client
        self._seq = itertools.count(1)

    def request(self, command: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one DAP request; return its response (the ``debug_reply`` content)."""
        content = {
            "type": "request",
            "seq": next(self._seq),
            "command": command,
            "arguments": arguments or {},
        }
        message = self.client.session.msg("debug_request", content)
        self.client.control_channel.send(message)
        reply = read_until(
            lambda seconds: self.client.get_control_msg(timeout=seconds),
            lambda reply: reply["parent_header"].get("msg_id") == message["header"]["msg_id"],
            f"the debug_reply to {command}",
            DEADLINE,
        )
        return reply["content"]

    def event(self, name: str) -> dict[str, Any]:
        """Wait for the debugger's next ``name`` event on IOPub (other messages are read)."""
        message = read_until(
            lambda seconds: self.client.get_iopub_msg(timeout=seconds),
            lambda m: m["msg_type"] == "debug_event" and m["content"].get("event") == name,
            f"the {name!r} debug event",
            DEADLINE,
        )
        return message["content"]

    def start(self) -> None:
        """``initialize`` and ``attach``, with the arguments JupyterLab sends."""
        self.request(
            "initialize",
            {
                "clientID": "mcp-notebook-tests",
                "clientName": "tests",
                "adapterID": "",
                "pathFormat": "path",
                "linesStartAt1": True,
                "columnsStartAt1": True,
                "supportsVariableType": True,
                "supportsVariablePaging": True,
                "supportsRunInTerminalRequest": True,
                "locale": "en",
            },
        )
        attached = self.request("attach")
        assert attached["success"], attached

    def stop(self) -> None:
        self.request("disconnect", {"restart": False, "terminateDebuggee": True})

    def break_in_cell(self, code: str, line: int) -> str:
        """A breakpoint at ``line`` of the cell ``code`` (its file, from ``dumpCell``)."""
        source = self.request("dumpCell", {"code": code})["body"]["sourcePath"]
        reply = self.request(
            "setBreakpoints",
            {"breakpoints": [{"line": line}], "source": {"path": source}, "sourceModified": False},
        )
        assert reply["success"] and reply["body"]["breakpoints"][0]["verified"], reply
        assert self.request("configurationDone")["success"]
        return source

    def clear_breakpoints(self, source: str) -> None:
        self.request(
            "setBreakpoints",
            {"breakpoints": [], "source": {"path": source}, "sourceModified": False},
        )

    def resume(self, thread_id: int) -> None:
        assert self.request("continue", {"threadId": thread_id})["success"]
