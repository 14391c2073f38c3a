"""The widget monitor's table: status by colour and icon, bursts folded, filters, search.

What a person at a notebook without the front-end extension (VS Code, Colab) reads; the
widgets are driven as a front end drives them (comm messages), no kernel needed.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from mcp_notebook.app import NotebookMCP
from mcp_notebook.protocol import CallRecord
from mcp_notebook.protocol.queueing import CellWatch
from mcp_notebook.ui import calltable
from mcp_notebook.ui.calltable import Filters, rows, table
from mcp_notebook.ui.decision import Decision
from mcp_notebook.ui.hub import Hub
from mcp_notebook.ui.statuses import LOOKS
from tests.unit.ui.test_monitor_races import from_front_end


def call(target="add", status="done", client="agent", view=None, started=1000.0, **arguments):
    record = CallRecord("tools/call", target, arguments or {"a": 1}, client)
    record.status, record.started, record.view = status, started, view
    return record


def test_every_status_has_its_own_icon_and_colour_class():
    icons = [icon for icon, _, _ in LOOKS.values()]
    classes = {css for _, css, _ in LOOKS.values()}
    # "queued" and "queued behind a cell" are one state told apart by words only.
    assert len(set(icons)) == len(icons) - 1
    assert len(classes) == len(LOOKS) - 1
    page = table(rows([call(status="done"), call(status="error")], Filters())[0], None, False)
    assert "mcp-st-done" in page and "mcp-st-error" in page
    assert "var(--jp-error-color1" in page and "var(--jp-success-color1" in page


def test_a_paused_or_queued_behind_call_says_so():
    paused, queued = call(status="running"), call(status="queued")
    paused.paused, queued.behind = True, "cell [7]"
    page = table(rows([paused, queued], Filters())[0], None, False)
    assert "paused in the debugger" in page and "queued behind cell [7]" in page


def test_a_burst_of_one_views_calls_is_one_row_with_a_count():
    drag = [
        call("explorer.set", view="ui://notebook/explorer", started=1000 + i * 0.05)
        for i in range(40)
    ]
    plain = [call("add", started=1003 + i * 0.05) for i in range(3)]  # not from a view
    found, more = rows([*drag, *plain], Filters())
    assert [(r.record.target, r.count) for r in found] == [
        ("add", 1),
        ("add", 1),
        ("add", 1),
        ("explorer.set", 40),
    ]
    assert not more
    assert "\u00d740" in table(found, None, more)


def test_a_pause_a_failure_or_another_client_ends_a_burst():
    view = "ui://notebook/explorer"
    calls = [
        call("explorer.set", view=view, started=1000),
        call("explorer.set", view=view, started=1001),
        call("explorer.set", view=view, started=1010),  # a later drag
        call("explorer.set", view=view, started=1010.1, status="error"),
        call("explorer.set", view=view, started=1010.2, client="other"),
    ]
    assert [r.count for r in rows(calls, Filters())[0]] == [1, 1, 1, 2]


@pytest.mark.parametrize(
    "filters, expected",
    [
        (Filters(status="error"), ["boom"]),
        (Filters(status="failed"), ["deny_me", "boom"]),
        (Filters(tool="add"), ["add"]),
        (Filters(client="cursor"), ["deny_me"]),
        (Filters(search="PARIS"), ["lookup"]),  # case-insensitive, in the arguments too
        (Filters(status="done", search="nothing like it"), []),
    ],
)
def test_filters_and_search_narrow_the_table(filters, expected):
    calls = [
        call("add"),
        call("boom", status="error"),
        call("lookup", city="Paris"),
        call("deny_me", status="denied", client="cursor"),
    ]
    assert [r.record.target for r in rows(calls, filters)[0]] == expected


def test_the_newest_rows_are_shown_and_the_page_says_more_exist():
    calls = [call("add", n=i) for i in range(calltable.SHOWN + 5)]
    found, more = rows(calls, Filters())
    assert len(found) == calltable.SHOWN and more
    assert found[0].record is calls[-1]
    assert "filter or search to find older calls" in table(found, None, more)


def test_client_text_stays_text_and_every_cut_cell_keeps_its_whole_text():
    hostile = call("add", client="<img src=x onerror=alert(1)>", note="y" * 500)
    page = table(rows([hostile], Filters())[0], None, False)
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    titles = re.findall(r"title='([^']*)'", page)
    assert any("y" * 500 in t for t in titles)  # the whole argument, a hover away


def test_every_cell_names_its_column_for_the_narrow_layout():
    # A narrow output area hides columns by these names (calltable.STYLE's @container).
    page = table(rows([call("add"), call("divide", status="error")], Filters())[0], None, False)
    names = [f"mcp-c-{title}" for title, _ in calltable.COLUMNS]
    (head,) = re.findall(r"<tr>(<th.*?)</tr>", page)
    assert re.findall(r"<th class='(mcp-c-[a-z]+)", head) == names
    for cells in re.findall(r"<tr data-call='\d+'>(.*?)</tr>", page):
        assert re.findall(r"<td class='(mcp-c-[a-z]+)", cells) == names
    assert "<div class='mcp-table-box'><table" in page
    empty = table([], None, False)
    assert "<td" not in empty and "no calls" in empty  # no cell spanning hidden columns


@pytest.fixture
def hub():
    loop = asyncio.new_event_loop()
    hub = Hub(
        NotebookMCP(),
        loop,
        headless=False,
        executor=lambda: None,
        replay=lambda *_: None,
        cells=CellWatch(),
    )
    yield hub
    hub.close()
    loop.close()


def test_the_monitors_filters_are_driven_from_the_front_end(hub):
    monitor = hub.monitor()
    for target, status in (("add", "done"), ("boom", "error"), ("add", "done")):
        hub.app.calls.add(call(target, status=status))
    monitor.refresh(None)
    assert monitor.tool_filter.options == (("every tool", ""), ("add", "add"), ("boom", "boom"))
    from_front_end(
        monitor.status_filter,
        {"method": "update", "state": {"index": 2 + list(LOOKS).index("error")}},
    )
    assert monitor.status_filter.value == "error"
    assert [label.split()[3] for label, _ in monitor.table.options] == ["boom"]
    assert (
        "mcp-st mcp-st-error" in monitor.calls_view.value
        and "mcp-st mcp-st-done" not in monitor.calls_view.value
    )
    from_front_end(monitor.status_filter, {"method": "update", "state": {"index": 0}})
    from_front_end(monitor.search, {"method": "update", "state": {"value": "boo"}})
    assert [label.split()[3] for label, _ in monitor.table.options] == ["boom"]
    from_front_end(monitor.search, {"method": "update", "state": {"value": ""}})
    assert len(monitor.table.options) == 3


def test_choosing_a_call_marks_its_row_and_shows_its_details(hub):
    monitor = hub.monitor()
    first = hub.app.calls.add(call("add", a=7))
    hub.app.calls.add(call("add", a=8))
    monitor.refresh(None)
    monitor.select(first.id)
    assert f"<tr data-call='{first.id}' class='mcp-selected'>" in monitor.calls_view.value
    assert f"#{first.id} tools/call add" in monitor.detail.value


def test_a_waiting_confirmation_is_pinned_in_the_monitor_and_under_the_start_cell(hub):
    from mcp_notebook.ui.confirm import PromptArea

    monitor = hub.monitor()
    hub.area = PromptArea()  # what `%mcp start` puts under its cell
    record = hub.app.calls.add(call("drop", status="queued"))
    tool = type(
        "Tool", (), {"name": "drop", "annotations": {}, "confirm": True, "description": ""}
    )()
    decision = Decision(tool, {"a": 1}, record, "agent", 60, hub.loop)
    hub._show(decision)
    panel = hub.panels[decision.id]
    assert panel in monitor.pending.children and panel in hub.area.children
    assert monitor.children.index(monitor.pending) == 1  # right under the server's state
    decision.settle("approved", {"a": 1})
    hub._hide(decision)
    assert panel not in monitor.pending.children and panel not in hub.area.children


def test_every_icon_is_in_the_font_front_ends_fall_back_to():
    """No empty box for a status: DejaVu Sans (what Linux browsers fall back to; matplotlib
    ships it) has every icon."""
    from pathlib import Path

    import matplotlib
    from fontTools.ttLib import TTFont

    font = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    cmap = TTFont(font).getBestCmap()
    missing = [(status, icon) for status, (icon, _, _) in LOOKS.items() if ord(icon) not in cmap]
    assert missing == []
