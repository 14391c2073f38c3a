"""The widget monitor's table of calls: rows a person can scan, as HTML.

Status shows by colour and icon (JupyterLab's theme variables, with fallbacks for front
ends without them: VS Code, Colab); every cell is cut with an ellipsis only on screen, its
whole text a hover away (``title``) and in the detail pane; a burst of one view's app-only
calls (a slider dragged) is one row with a count. Filters pick rows by status, tool,
client and a search text. Plain functions over call records: no widgets here.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..protocol import CallRecord
from ..wire.jsontext import sendable
from . import render
from .statuses import FAILED, LOOKS, look

STATUS_FILTERS = ("all", "failed", *LOOKS)  # "failed": error, denied, interrupted, cancelled
SHOWN = 200  # rows in the page at most (the newest that match); the rest: filter or search
BURST_GAP = 2.0  # seconds between two calls of one view's control that make one burst
ARGUMENTS_BYTES = 2048  # of a call's arguments, for its row's summary

STYLE = """<style>
.mcp-table { border-collapse: collapse; width: 100%; table-layout: fixed;
  font-size: var(--jp-ui-font-size1, 13px); color: var(--jp-ui-font-color1, inherit); }
.mcp-table-box { container-type: inline-size; width: 100%; min-width: 24em; }
.mcp-table th { text-align: left; font-weight: 600; padding: 3px 6px;
  border-bottom: 1px solid var(--jp-border-color1, #bdbdbd);
  color: var(--jp-ui-font-color2, #616161); }
.mcp-table th, .mcp-table td { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.mcp-table td { padding: 2px 6px; border-bottom: 1px solid var(--jp-border-color3, #eeeeee); }
@container (max-width: 60em) { .mcp-table .mcp-c-client, .mcp-table .mcp-c-arguments {
  display: none; } .mcp-table th.mcp-c-target { width: auto !important; } }
@container (max-width: 37em) { .mcp-table .mcp-c-method { display: none; }
  .mcp-table th.mcp-c-status { width: 7.5em !important; } }
.mcp-table td.mcp-c-arguments { font-family: var(--jp-code-font-family, monospace); }
.mcp-table tr.mcp-selected td { background: var(--jp-layout-color2, #eeeeee); }
.mcp-table .mcp-count { border-radius: 8px; padding: 0 5px; margin-left: 4px;
  background: var(--jp-layout-color3, #e0e0e0); font-size: 11px; }
.mcp-st { font-weight: 600; }
.mcp-st-done { color: var(--jp-success-color1, #2e7d32); }
.mcp-st-error { color: var(--jp-error-color1, #c62828); }
.mcp-st-denied { color: var(--jp-error-color2, #8e2424); }
.mcp-st-interrupted { color: var(--jp-warn-color2, #b26a00); }
.mcp-st-cancelled { color: var(--jp-ui-font-color2, #757575); }
.mcp-st-dropped { color: var(--jp-ui-font-color2, #757575); text-decoration: line-through; }
.mcp-st-paused { color: var(--jp-brand-color1, #1565c0); }
.mcp-st-waiting { color: var(--jp-warn-color1, #e65100); }
.mcp-st-queued { color: var(--jp-ui-font-color3, #9e9e9e); }
.mcp-st-running { color: var(--jp-info-color1, #0277bd); }
.mcp-table-note { color: var(--jp-ui-font-color2, #757575); font-style: italic; }
</style>"""

# Title, width (the table's layout is fixed: cells cut, never the page). In a narrow
# output area the columns a person can do without go, as in JupyterLab's file browser:
# client and arguments below 60em (both in the details pane: the fixed columns take
# 29.5em and arguments needs room to be read), then the method below 37em; 24em at least
# (a box sized by its content would otherwise have none).
COLUMNS = (
    ("time", "5.5em"),
    ("client", "12%"),
    ("method", "8em"),
    ("target", "18%"),
    ("arguments", "auto"),
    ("took", "5em"),
    ("status", "11em"),
)


@dataclass(frozen=True)
class Filters:
    status: str = "all"
    tool: str = ""  # "" is every tool
    client: str = ""
    search: str = ""

    def keeps(self, record: CallRecord) -> bool:
        if self.status == "failed":
            if record.status not in FAILED:
                return False
        elif self.status == "paused":
            if not record.paused:
                return False
        elif self.status == "queued behind":
            if not (record.status == "queued" and record.behind):
                return False
        elif self.status != "all" and record.status != self.status:
            return False
        if self.tool and record.target != self.tool:
            return False
        if self.client and record.client != self.client:
            return False
        return not self.search or self.search.casefold() in _haystack(record)


@dataclass
class Row:
    """One line of the table: a call, or the newest of a burst and how many it stands for."""

    record: CallRecord
    count: int = 1


def rows(
    records: Sequence[CallRecord], filters: Filters, limit: int = SHOWN
) -> tuple[list[Row], bool]:
    """The rows to show, newest first: ``records`` (oldest first) filtered, bursts folded;
    and whether older matching calls were left out (past ``limit`` rows)."""
    found: list[Row] = []
    for record in reversed(records):
        if not filters.keeps(record):
            continue
        last = found[-1] if found else None
        if last is not None and _same_burst(last.record, record):
            last.count += 1
            continue
        if len(found) == limit:
            return found, True
        found.append(Row(record))
    return found, False


def _same_burst(newer: CallRecord, older: CallRecord) -> bool:
    """Calls from one view's controls (app-only calls), same tool and client and outcome,
    each within ``BURST_GAP`` of the next: one drag of a slider."""
    return (
        newer.view is not None
        and newer.view == older.view
        and newer.target == older.target
        and newer.client == older.client
        and newer.status == older.status
        and 0 <= newer.started - older.started <= BURST_GAP
    )


def table(found: Iterable[Row], selected: int | None, more: bool) -> str:
    """The HTML of the table; ``more``: older matching calls were left out."""
    head = "".join(
        f"<th class='mcp-c-{title}'{_width(width)}>{title}</th>" for title, width in COLUMNS
    )
    body = "".join(_row(row, selected) for row in found)
    if more:
        note = (
            f"<div class='mcp-table-note'>The newest {SHOWN} rows are shown: filter or "
            "search to find older calls (all are in <code>mcp.calls</code>).</div>"
        )
    else:  # under the table, not a cell spanning every column: hidden ones would take room
        note = "" if body else "<div class='mcp-table-note'>no calls</div>"
    # A lone surrogate in a client's text cannot cross the widget's comm: U+FFFD instead.
    return sendable(
        f"{STYLE}<div class='mcp-table-box'><table class='mcp-table'><tr>{head}</tr>{body}"
        f"</table></div>{note}"
    )


def _width(width: str) -> str:
    return "" if width == "auto" else f" style='width: {width}'"


def _row(row: Row, selected: int | None) -> str:
    record = row.record
    icon, css, words = look(record)
    target = ("view: " if record.view else "") + record.target
    target += " (dispatched)" if record.via else ""
    arguments = render.compact(render.shown(record.arguments, ARGUMENTS_BYTES))
    count = f"<span class='mcp-count' title='{row.count} calls'>\u00d7{row.count}</span>"
    cells = [
        _cell(time.strftime("%H:%M:%S", time.localtime(record.started)), "mcp-c-time"),
        _cell(record.client, "mcp-c-client"),
        _cell(record.method, "mcp-c-method"),
        _cell(target, "mcp-c-target", extra=count if row.count > 1 else ""),
        _cell(arguments, "mcp-c-arguments"),
        _cell(render.took(record), "mcp-c-took"),
        f"<td class='mcp-c-status mcp-st mcp-st-{css}' title='{html.escape(words, quote=True)}'>"
        f"{icon} {html.escape(words)}</td>",
    ]
    chosen = " class='mcp-selected'" if record.id == selected else ""
    return f"<tr data-call='{record.id}'{chosen}>{''.join(cells)}</tr>"


def _cell(text: str, css: str = "", extra: str = "") -> str:
    klass = f" class='{css}'" if css else ""
    shown = html.escape(render.cut(text, 2000))  # a hover shows it whole; the page, a part
    return f"<td{klass} title='{html.escape(text, quote=True)}'>{shown}{extra}</td>"


def _haystack(record: CallRecord) -> str:
    """What a search looks in: the call's words and a summary of its arguments."""
    arguments = render.compact(render.shown(record.arguments, ARGUMENTS_BYTES))
    words = (record.client, record.method, record.target, record.status, record.view or "")
    return " ".join((*words, arguments)).casefold()


def choices(records: Iterable[CallRecord]) -> tuple[list[str], list[str]]:
    """The tools and the clients seen in ``records``, sorted, for the filters."""
    tools, clients = set(), set()
    for record in records:
        tools.add(record.target)
        clients.add(record.client)
    return sorted(tools), sorted(clients)
