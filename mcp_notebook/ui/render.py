"""Plain functions that turn calls, results and sessions into text and HTML for the monitor.

No widgets here: the monitor sets these strings on its widgets, on the kernel's loop.
"""

from __future__ import annotations

import html
import json
import time
from typing import Any

from ..protocol import CallRecord
from ..protocol.abbreviate import abbreviate, estimate, is_cut
from ..protocol.calls import MAX_CALL_BYTES, mib
from ..protocol.kinds import DROPPED
from ..protocol.versions import HANDSHAKE_VERSIONS, MODERN_VERSIONS
from ..wire.jsontext import sendable
from .statuses import look

LABEL_BYTES = 1024  # of a call's arguments, for its one-line label
NBSP = "\u00a0"  # a <select> collapses ordinary spaces; these keep the columns aligned
MAX_INLINE = 100_000  # characters of one result block shown in the page

STYLE = """<style>
.mcp-monitor .mcp-calls select, .mcp-monitor .mcp-task-table select,
.mcp-monitor .mcp-mono {
  font-family: var(--jp-code-font-family, monospace); font-size: 12px; }
.mcp-monitor .mcp-head pre { margin: 0; padding-left: 4px; }
.mcp-monitor pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; }
.mcp-monitor table.mcp-clients td, .mcp-monitor table.mcp-clients th {
  padding: 0 8px 0 0; text-align: left; }
.mcp-monitor .mcp-error { color: var(--jp-error-color1, #c62828); }
.mcp-monitor .mcp-trace { max-height: 320px; overflow: auto; }
.mcp-confirm { border: 2px solid var(--jp-warn-color1, #f9a825); border-radius: 4px;
  padding: 6px; margin: 4px 0; }
</style>"""


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return repr(value)


def pretty(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError):
        return repr(value)


def shown(value: Any, limit: int) -> Any:
    """``value``, or an abbreviated copy if it is bigger than ``limit``: the history cuts a
    call's arguments only when the call ends, and a row shows a few characters of them."""
    return value if estimate(value, limit) <= limit else abbreviate(value, limit)


def asking(tool: Any) -> tuple[list[str], str]:
    """What a confirmation says of ``tool``: its hints (destructive, confirm=True) and the
    first paragraph of its description (plain text: each view escapes it its own way)."""
    hints = []
    if (tool.annotations or {}).get("destructiveHint") is True:
        hints.append("destructive")
    if tool.confirm:
        hints.append("confirm=True")
    return hints, (tool.description or "").strip().split("\n\n")[0]


def took(record: CallRecord) -> str:
    if record.duration is None:
        return "…"
    if record.duration < 1:
        return f"{record.duration * 1000:.0f} ms"
    return f"{record.duration:.1f} s"


def row(record: CallRecord) -> str:
    """A call as one short line, for the monitor's "details of" chooser."""
    _, _, words = look(record)
    when = time.strftime("%H:%M:%S", time.localtime(record.started))
    arguments = cut(compact(shown(record.arguments, LABEL_BYTES)), 60)
    target = ("view:" if record.view else "") + record.target
    return sendable(
        f"#{record.id} {when} {record.method} {target} {arguments} ({record.client}) \u2014 {words}"
    )


def era(session: Any) -> str:
    version: str | None = session.protocol_version
    if getattr(session, "era", "handshake") == "modern":
        modern = version if version in MODERN_VERSIONS else MODERN_VERSIONS[-1]
        if getattr(session, "subscription_id", None) is not None:
            return f"{modern} listen stream"
        return f"{modern} stateless (_meta)"
    if version in HANDSHAKE_VERSIONS:
        return "handshake (initialize)"
    if version in MODERN_VERSIONS:
        return version
    return "not initialized yet" if version is None else "unknown"


def server_state(state: dict[str, Any]) -> str:
    """The monitor's header: where it serves, the policy, and every connected client."""
    if not state["url"]:
        where = "<b>MCP server</b>: not serving (<code>%mcp start</code>)"
    else:
        auth = "bearer token" if state["auth"] else "no auth"
        if state.get("oauth"):
            auth = f"OAuth tokens of {html.escape(state['oauth'])}"
        where = (
            f"<b>MCP server {html.escape(state['name'])}</b> at "
            f"<code>{html.escape(state['url'])}</code> ({auth})"
        )
    facts = (
        f"confirm: {html.escape(state['policy'])}, timeout {state['timeout']:g} s"
        f" · history {state['calls']}/{state['history']} calls,"
        f" {mib(state.get('bytes', 0))}/{mib(state.get('max_bytes', 0))}"
        f" · trace {'on' if state['trace'] else 'off'}"
    )
    clients = state["clients"]
    if clients:
        lines = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(c[k]))}</td>"
                for k in ("name", "version", "protocol", "era", "transport")
            )
            + "</tr>"
            for c in clients
        )
        table = (
            "<table class='mcp-clients'><tr><th>client</th><th>version</th><th>protocol</th>"
            f"<th>dialect</th><th>transport</th></tr>{lines}</table>"
        )
    else:
        table = "<i>no client connected</i>"
    return f"{STYLE}<div>{where}<br>{facts}</div>{table}"


def clients(server: Any, stateless: list[Any]) -> list[dict[str, Any]]:
    """The server's sessions (snapshot taken off the server's thread) and recent stateless
    clients, newest last."""
    sessions: tuple[Any, ...] = ()
    for _ in range(5):
        try:  # a C-level copy; retried if the server thread changed the dict meanwhile
            sessions = tuple(server.sessions.values()) if server is not None else ()
            break
        except RuntimeError:
            continue
    found = []
    for session in (*sessions, *stateless):
        info = dict(session.client_info or {})
        found.append(
            {
                "name": info.get("name") or "?",
                "version": info.get("version") or "",
                "protocol": session.protocol_version or "?",
                "era": era(session),
                "transport": f"{session.transport} via {session.via}"
                if session.via
                else session.transport,
            }
        )
    return found


def detail(record: CallRecord, code: str | None = None) -> str:
    """Everything about one call except its captured output (an Output widget shows it);
    ``code``: its cell's code, when the caller has it already (``cell_code``)."""
    when = time.strftime("%H:%M:%S", time.localtime(record.started))
    parts = [
        f"<b>#{record.id} {html.escape(record.method)} {html.escape(record.target)}</b>"
        f" — {html.escape(record.status)} · {took(record)} · {html.escape(record.client)}"
        f" · {when}"
        + (f" · dispatched through {html.escape(record.via)}" if record.via else "")
        + (f" · from the app view {html.escape(record.view)}" if record.view else ""),
    ]
    if record.status == "interrupted":
        parts.append(
            "<i class='mcp-error'>Interrupted from the notebook (Kernel &gt; Interrupt): the "
            "client got an error.</i>"
        )
    if record.status == DROPPED:
        parts.append(
            "<i>Dropped before it ran: its client hung up, and nothing could receive the reply.</i>"
        )
    if record.paused:
        parts.append(
            "<i>Paused in the kernel's debugger (<code>%mcp break</code>): step or continue "
            "there; the client waits for the result.</i>"
        )
    if record.behind:
        verb = "Queued" if record.status == "queued" else "Waited"
        parts.append(
            f"<i>{verb} behind {html.escape(record.behind)}: a running cell held the kernel.</i>"
        )
    if record.abbreviated:
        parts.append(
            f"<i>Abbreviated in the history: {html.escape(', '.join(sorted(record.abbreviated)))}"
            " (long values end in “… [cut: …]”; see <code>%mcp history</code>).</i>"
        )
    parts += ["<b>arguments</b>", _pre(pretty(shown(record.arguments, MAX_CALL_BYTES)))]
    if has_cell(record):
        parts.append(
            f"<i><code>mcp.calls.find({record.id}).to_cell()</code> (or <b>Insert as "
            "cell</b> above, in JupyterLab) puts this call in a new cell below, with the "
            "arguments the tool received.</i>"
        )
        code = code if code is not None else cell_code(record)
        if code is not None:  # also to copy: front ends without the extension (VS Code)
            parts += [
                "<b>as a cell</b> (select and copy)",
                f"<pre class='mcp-mono mcp-cell-code'>{html.escape(code)}</pre>",
            ]
    if record.result is not None:
        parts += ["<b>result</b>", result(record.result)]
    if record.traceback:
        parts += [
            "<b>traceback</b> (<code>%debug</code> right after the failure, or "
            f"<code>%mcp debug {record.id}</code>)",
            f"<pre class='mcp-mono mcp-error'>{html.escape(record.traceback)}</pre>",
        ]
    elif record.error is not None:
        parts += [f"<pre class='mcp-error'>{html.escape(str(record.error))}</pre>"]
    return "".join(f"<div>{p}</div>" for p in parts)


def has_cell(record: CallRecord) -> bool:
    """Whether ``record`` can become a cell: a tool call whose arguments were kept whole."""
    return record.method == "tools/call" and "arguments" not in record.abbreviated


def cell_code(record: CallRecord) -> str | None:
    """The code ``record.to_cell()`` would insert; None when there is none to show (no
    kernel extension, the tool is gone, or its arguments no longer convert)."""
    coder = CallRecord.cell_coder
    if coder is None:
        return None
    try:
        return coder(record)
    except Exception:  # the detail pane still shows everything else about the call
        return None


def result(value: Any) -> str:
    """A tools/call, resources/read or prompts/get result: text, JSON and images."""
    if not isinstance(value, dict):
        return _pre(pretty(value))
    out = []
    if value.get("isError"):
        out.append("<div class='mcp-error'>isError: true</div>")
    for block in value.get("content") or []:
        out.append(_block(block))
    if "structuredContent" in value:
        out.append("<i>structuredContent</i>" + _pre(pretty(value["structuredContent"])))
    for item in value.get("contents") or []:  # resources/read
        out.append(_resource(item))
    for message in value.get("messages") or []:  # prompts/get
        content = message.get("content") or {}
        out.append(f"<i>{html.escape(str(message.get('role')))}</i>{_block(content)}")
    if "completion" in value:
        out.append(_pre(pretty(value["completion"])))
    return "".join(out) or _pre(pretty(value))


def _block(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return _pre(str(block.get("text", "")))
    if kind == "image":
        return _image(block.get("mimeType", "image/png"), block.get("data", ""))
    if kind == "audio":
        mime, data = html.escape(block.get("mimeType", "")), block.get("data", "")
        if is_cut(data):
            return _pre(f"{mime} audio, not kept in the history {data}")
        return f"<audio controls src='data:{mime};base64,{html.escape(data)}'></audio>"
    if kind == "resource":
        return _resource(block.get("resource") or {})
    if kind == "resource_link":
        return f"<div>link: <code>{html.escape(str(block.get('uri')))}</code></div>"
    return _pre(pretty(block))


def _resource(item: dict[str, Any]) -> str:
    uri = html.escape(str(item.get("uri", "")))
    mime = str(item.get("mimeType") or "")
    if "text" in item:
        return f"<div><code>{uri}</code></div>" + _pre(str(item["text"]))
    if mime.startswith("image/") and "blob" in item:
        return f"<div><code>{uri}</code></div>" + _image(mime, item["blob"])
    size = len(item.get("blob", "")) * 3 // 4
    return f"<div><code>{uri}</code> {html.escape(mime)}, about {size} bytes</div>"


def _image(mime: str, data: str) -> str:
    if is_cut(data):  # the history kept no pixels: say so instead of a broken image
        return _pre(f"{mime} image, not kept in the history {data}")
    return (
        f"<img style='max-width: 100%; max-height: 320px' "
        f"src='data:{html.escape(mime)};base64,{html.escape(data)}'>"
    )


def _pre(text: str) -> str:
    if len(text) > MAX_INLINE:
        text = text[:MAX_INLINE] + f"\n[... {len(text) - MAX_INLINE} more characters]"
    return f"<pre class='mcp-mono'>{_escape(text)}</pre>"


def _escape(text: str) -> str:
    """HTML for ``text`` that a widget can send (a tool's result may hold a lone surrogate:
    no comm message could carry it, and the monitor would stop updating)."""
    return html.escape(sendable(text))


def trace(entries: list[tuple[float, str, str, str]]) -> str:
    lines = [
        f"{time.strftime('%H:%M:%S', time.localtime(t))} {arrow} {html.escape(who)} {_escape(text)}"
        for t, arrow, who, text in entries
    ]
    body = "\n".join(lines) or "(no traffic yet)"
    return f"<b>JSON-RPC trace</b><pre class='mcp-mono mcp-trace'>{body}</pre>"
