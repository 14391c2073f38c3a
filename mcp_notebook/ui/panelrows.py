"""What the MCP panel is sent: calls, the server, its clients, what is registered and the
waiting confirmations, as small JSON values (ui/panelfeed.py sends them).

Every value is bounded: a row carries a few hundred characters of the call, whatever its
arguments; a call's details carry each of its parts up to ``MAX_PART`` characters and say
so when they stop short (the history keeps up to 1 MiB of each, ``mcp.calls.find(n)``
gives all of it). Plain functions, no widgets, no comms.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from ..protocol import CallRecord
from ..protocol.versions import HANDSHAKE_VERSIONS, MODERN_VERSIONS
from ..registry.skills import SkillResource
from . import render
from .statuses import look

ARGUMENTS_BYTES = 4096  # of a call's arguments, for the row that shows a summary of them
ROW_TEXT = 200  # characters of a row's client, target and argument summary
MAX_PART = 256 * 1024  # characters of a call's arguments, result, output or traceback
TRACEBACK_LINES = 40  # the end of a traceback: where the error is
DESCRIPTION = 300  # characters of a registration's description


def status_key(record: CallRecord) -> str:
    """One word per status the panel colours: done, error, denied, interrupted, cancelled,
    dropped (its client hung up before it ran), paused, awaiting, behind (queued behind a
    cell), queued, running."""
    if record.paused:
        return "paused"
    if record.status == "awaiting confirmation":
        return "awaiting"
    if record.status == "queued" and record.behind:
        return "behind"
    if record.status == "dropped: client gone":
        return "dropped"
    return str(record.status)


def row(record: CallRecord, decided: str | None = None) -> dict[str, Any]:
    """One line of the calls table."""
    return {
        "id": record.id,
        "time": record.started,
        "client": render.cut(record.client, ROW_TEXT),
        "method": render.cut(record.method, 64),
        "target": render.cut(record.target, ROW_TEXT),
        "view": render.cut(record.view, ROW_TEXT) if record.view else None,
        "via": render.cut(record.via, 64) if record.via else None,
        "args": render.cut(render.compact(_summary(record.arguments)), ROW_TEXT),
        "duration": record.duration,
        "status": status_key(record),
        "label": look(record)[2],
        "decided": decided,
    }


def _summary(arguments: Any) -> Any:
    return render.shown(arguments, ARGUMENTS_BYTES)


def _part(text: str | None, call_id: int, what: str) -> dict[str, Any] | None:
    if text is None:
        return None
    if len(text) <= MAX_PART:
        return {"text": text, "cut": False}
    hint = f"mcp.calls.find({call_id}).{what}"
    return {"text": text[:MAX_PART], "cut": True, "total": len(text), "whole": hint}


def _output_text(record: CallRecord) -> str | None:
    texts = []
    for item in list(record.output):
        if "text" in item:
            texts.append(str(item["text"]))
        elif isinstance(item.get("data"), dict) and "text/plain" in item["data"]:
            texts.append(str(item["data"]["text/plain"]) + "\n")
    return "".join(texts) or None


def _traceback_tail(text: str | None) -> str | None:
    if not text:
        return None
    lines = text.rstrip("\n").split("\n")
    if len(lines) <= TRACEBACK_LINES:
        return text
    return "…\n" + "\n".join(lines[-TRACEBACK_LINES:])


def detail(record: CallRecord, times: dict[str, float], code: str | None) -> dict[str, Any]:
    """Everything the detail pane shows of one call (``times``: when the panel's feed saw
    each of its statuses begin, on the monotonic clock)."""
    error = None
    if record.error is not None:
        error = f"{type(record.error).__name__}: {record.error}"
    return {
        "id": record.id,
        "row": row(record),
        "arguments": _part(render.pretty(record.arguments), record.id, "arguments"),
        "result": _part(
            None if record.result is None else render.pretty(record.result), record.id, "result"
        ),
        "output": _part(_output_text(record), record.id, "output"),
        "error": _part(error, record.id, "error"),
        "traceback": _part(_traceback_tail(record.traceback), record.id, "traceback"),
        "abbreviated": sorted(record.abbreviated),
        "timing": timing(times, record),
        "code": code if code is None or len(code) <= MAX_PART else None,
    }


def timing(times: dict[str, float], record: CallRecord) -> dict[str, float | None]:
    """Seconds queued, waiting for a person and running, from the statuses seen."""
    end = times.get("final")
    if end is None and record.duration is None:
        end = time.monotonic()

    def between(start: str, *ends: str) -> float | None:
        begun = times.get(start)
        if begun is None:
            return None
        for name in ends:
            if name in times:
                return max(0.0, times[name] - begun)
        return None if end is None else max(0.0, end - begun)

    return {
        "queued": between("queued", "awaiting", "running", "final"),
        "waiting": between("awaiting", "running", "final"),
        "running": between("running", "final"),
        "total": record.duration,
    }


def state(hub_state: dict[str, Any], token: str | None, running: bool) -> dict[str, Any]:
    """The server: where it serves and how, and who is connected."""
    return {
        "name": hub_state["name"],
        "running": running,
        "url": hub_state["url"],
        "token": token,
        "transports": ["Streamable HTTP", "stdio (mcp-notebook bridge)"] if running else [],
        "eras": [
            f"handshake {HANDSHAKE_VERSIONS[0]} … {HANDSHAKE_VERSIONS[-1]}",
            f"stateless {MODERN_VERSIONS[-1]}",
        ],
        "policy": hub_state["policy"],
        "timeout": hub_state["timeout"],
        "calls": hub_state["calls"],
        "history": hub_state["history"],
        "clients": [
            {k: render.cut(str(v), ROW_TEXT) for k, v in client.items()}
            for client in hub_state["clients"][-64:]
        ],
    }


def _first_line(fn: Any) -> str | None:
    """The line that defines ``fn`` in its cell (the panel finds the cell by it)."""
    if str(getattr(fn, "__module__", "")).startswith("mcp_notebook"):
        return None  # a reader the package made (a DataFrame's): no cell defines it
    try:
        lines, _ = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    for line in lines:
        if line.lstrip().startswith(("def ", "async def ")):
            return render.cut(line.strip(), ROW_TEXT)
    return None


def registrations(registry: Any) -> list[dict[str, Any]]:
    """What is registered, with descriptions and a line to find each one's cell by."""
    found: list[dict[str, Any]] = []

    def add(kind: str, name: str, item: Any, fn: Any = None) -> None:
        about = (getattr(item, "description", None) or "").strip().split("\n\n")[0]
        found.append(
            {
                "kind": kind,
                "name": render.cut(name, ROW_TEXT),
                "description": render.cut(about, DESCRIPTION),
                "find": _first_line(fn) if fn is not None else None,
            }
        )

    for name, tool in list(registry.tools.items()):
        add("app" if getattr(tool, "view_uri", None) else "tool", name, tool, tool.fn)
    for uri, resource in list(registry.resources.items()):
        if isinstance(resource, SkillResource):
            if resource.skill is not None:  # one row a skill (its SKILL.md), not one a file
                add("skill", resource.skill.path, resource.skill, None)  # found by its name
            continue
        add("resource", uri, resource, getattr(resource, "reader", None))
    for uri, template in list(registry.templates.items()):
        add("template", uri, template, getattr(template, "fn", None))
    for name, prompt in list(registry.prompts.items()):
        add("prompt", name, prompt, getattr(prompt, "render_fn", None))
    return found[:2000]


def pending(decision: Any) -> dict[str, Any]:
    """A confirmation that waits: the panel's card, the notification."""
    tool = decision.tool
    hints, about = render.asking(tool)
    return {
        "id": decision.id,
        "tool": render.cut(tool.name, ROW_TEXT),
        "client": render.cut(decision.client, ROW_TEXT),
        "description": render.cut(about, DESCRIPTION),
        "hints": hints,
        "arguments": render.cut(render.pretty(decision.arguments), MAX_PART),
        "remaining": decision.remaining(),
        "timeout": decision.timeout,
    }
