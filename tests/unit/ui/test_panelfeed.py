"""The MCP panel's feed (ui/panelfeed.py, ui/batching.py, ui/panelrows.py) without a kernel:
fake comms, a clock turned by hand. Updates are batched whatever the call rate and each
message is bounded; hostile front-end messages get one answer each and change nothing;
confirmations decided from a panel go through the one Decision (the first answer wins).
The same feed through a real kernel: tests/kernel/test_panel_feed.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mcp_notebook.app import NotebookMCP
from mcp_notebook.protocol import CallRecord
from mcp_notebook.ui import panelfeed
from mcp_notebook.ui.batching import Batcher
from mcp_notebook.ui.decision import APPROVED, DENIED, Decision
from mcp_notebook.ui.panelfeed import MAX_PANELS, MAX_ROWS, PANEL, PanelFeed
from tests.unit.ui.test_cellinsert import FakeComm, message


class Schedule:
    """``schedule(delay, callback)``: nothing runs until the test says so."""

    def __init__(self) -> None:
        self.waiting: list[tuple[float, Any]] = []

    def __call__(self, delay: float, callback: Any) -> None:
        self.waiting.append((delay, callback))

    def run(self) -> int:
        """Run what is due now (not the 1 s ticks); how many ran."""
        ran = 0
        while due := [w for w in self.waiting if w[0] < 1.0]:
            for entry in due:
                self.waiting.remove(entry)
                entry[1]()
                ran += 1
        return ran


class World:
    def __init__(self, pauses: Any = None) -> None:
        self.app = NotebookMCP()
        self.targets: dict[str, Any] = {}
        self.schedule = Schedule()
        self.feed = PanelFeed(
            app=self.app,
            state=lambda: {
                "name": "nb",
                "url": None,
                "policy": "marked",
                "timeout": 120.0,
                "calls": len(self.app.calls),
                "history": self.app.calls.maxlen,
                "clients": [],
            },
            schedule=self.schedule,
            register=self.targets.__setitem__,
            pauses=pauses,
        )
        self.loop = asyncio.new_event_loop()

        @self.app.tool(confirm=True)
        def drop(table: str) -> str:
            """Drop a table."""
            return table

    def open(self, session: str) -> FakeComm:
        channel = FakeComm(PANEL)
        self.targets[PANEL](channel, message(session, {"comm_id": session, "data": {}}))
        return channel

    def call(self, target: str = "drop", **arguments: Any) -> CallRecord:
        record = self.app.calls.add(CallRecord("tools/call", target, arguments, "agent 1.0"))
        self.feed.call_changed(record)
        return record

    def decision(self, record: CallRecord) -> Decision:
        tool = self.app.registry.tools["drop"]
        decision = Decision(tool, record.arguments, record, "agent 1.0", 120, self.loop)
        record.set_status("awaiting confirmation")
        self.feed.show(decision)
        return decision

    def ask(self, channel: FakeComm, session: str, data: Any) -> list[Any]:
        """Send ``data`` on ``channel``; the answers it got."""
        before = len(channel.sent)
        channel.message_from(session, data)
        return [m for m in channel.sent[before:] if m.get("kind") == "answer"]


@pytest.fixture
def world():
    w = World()
    yield w
    w.loop.close()


def test_the_feed_notes_nothing_while_no_panel_is_open(world):
    for _ in range(100):
        world.call(table="t").finish("done", "ok")
    assert world.schedule.waiting == []  # no batch, no timer: a call pays nothing


def test_a_panel_gets_a_snapshot_then_batched_updates_whatever_the_call_rate(world):
    for n in range(3):
        world.call(table=f"t{n}")
    panel = world.open("tab-a")
    (snapshot,) = panel.sent
    assert snapshot["kind"] == "snapshot" and [c["args"] for c in snapshot["calls"]] == [
        '{"table":"t0"}',
        '{"table":"t1"}',
        '{"table":"t2"}',
    ]
    assert [r["name"] for r in snapshot["registrations"]] == ["drop"]
    assert snapshot["registrations"][0]["find"] == "def drop(table: str) -> str:"
    # 300 calls, each queued, running, then done: 900 changes, one message.
    for n in range(300):
        record = world.call(table=f"x{n}")
        record.set_status("running")
        record.finish("done", "ok")
    assert world.schedule.run() == 1
    (update,) = panel.sent[1:]
    assert update["kind"] == "update"
    assert len(update["calls"]) == 300 and {c["status"] for c in update["calls"]} == {"done"}


def test_one_message_holds_at_most_max_rows_and_the_rest_follows(world):
    panel = world.open("tab-a")
    records = [world.call(n=n) for n in range(MAX_ROWS * 2 + 10)]
    world.schedule.run()
    updates = panel.sent[1:]
    assert [len(u["calls"]) for u in updates] == [MAX_ROWS, MAX_ROWS, 10]
    sent = [c["id"] for u in updates for c in u["calls"]]
    assert sorted(sent) == [r.id for r in records]  # each once, none lost
    assert max(len(json.dumps(u)) for u in updates) < MAX_ROWS * 600


def test_batches_leave_at_most_once_per_interval():
    clock = [100.0]
    sent: list[set[Any]] = []
    scheduled: list[tuple[float, Any]] = []
    batcher = Batcher(
        lambda keys: sent.append(keys) or set(),
        lambda d, f: scheduled.append((d, f)),
        clock=lambda: clock[0],
    )
    for key in range(1000):
        batcher.note(key)
    assert len(scheduled) == 1 and scheduled[0][0] == 0  # the first batch leaves at once
    scheduled.pop()[1]()
    batcher.note("again")
    assert len(scheduled) == 1 and scheduled[0][0] == pytest.approx(batcher.interval)
    clock[0] += 0.03
    batcher.note("and again")  # still one timer
    assert len(scheduled) == 1
    scheduled.pop()[1]()
    assert [len(s) for s in sent] == [1000, 2]


def test_a_huge_call_makes_a_small_row_and_a_detail_that_says_where_the_rest_is(world):
    panel = world.open("tab-a")
    record = world.call(table="x" * 2_000_000)
    world.schedule.run()
    (row,) = panel.sent[-1]["calls"]
    assert len(row["args"]) <= panelfeed.panelrows.ROW_TEXT
    (answer,) = world.ask(panel, "tab-a", {"request": 1, "op": "detail", "call": record.id})
    part = answer["detail"]["arguments"]
    assert part["cut"] and part["total"] > part["text"].__len__()
    assert part["whole"] == f"mcp.calls.find({record.id}).arguments"


HOSTILE = [
    {"request": 1},
    {"request": 2, "op": "nope"},
    {"request": 3, "op": "decide", "call": "1", "approve": True, "where": "panel"},
    {"request": 4, "op": "decide", "call": True, "approve": True, "where": "panel"},
    {"request": 5, "op": "decide", "call": 1, "approve": "yes", "where": "panel"},
    {"request": 6, "op": "decide", "call": 1, "approve": True, "where": "elsewhere"},
    {"request": 7, "op": "decide", "call": 1, "approve": True, "where": "panel", "who": "x" * 99},
    {"request": 8, "op": "detail", "call": 10**30},
    {"request": 9, "op": "pause", "on": "yes"},
    {"request": 10, "op": "detail", "call": 1, "pad": "x" * (panelfeed.MAX_REQUEST + 1)},
    {"request": 11, "op": ["decide"]},
    {"request": 12, "op": "decide", "call": 999_999, "approve": False, "where": "panel"},
]


def test_hostile_front_end_messages_get_one_refusal_each_and_change_nothing(world):
    panel = world.open("tab-a")
    record = world.call(table="orders")
    decision = world.decision(record)
    for data in HOSTILE:
        answers = world.ask(panel, "tab-a", data)
        assert len(answers) == 1 and answers[0]["request"] == data["request"], data
        assert answers[0]["ok"] is False and answers[0]["error"], data
    for data in ["text", None, [1], {"op": "snapshot"}, {"request": True, "op": "snapshot"}]:
        assert world.ask(panel, "tab-a", data) == []  # no readable id: no answer
    assert decision.pending  # nothing decided it


def test_approve_with_wrong_arguments_is_refused_and_the_call_still_waits(world):
    panel = world.open("tab-a")
    decision = world.decision(world.call(table="orders"))
    bad = {"request": 1, "op": "decide", "call": decision.id, "approve": True}
    (answer,) = world.ask(panel, "tab-a", {**bad, "where": "panel", "arguments": {"table": 3}})
    assert answer["ok"] is False and "table" in answer["error"]
    assert decision.pending


def test_two_tabs_decide_once_and_the_row_says_who_where_and_after_how_long(world):
    tab_a, tab_b = world.open("tab-a"), world.open("tab-b")
    record = world.call(table="orders")
    decision = world.decision(record)
    world.schedule.run()
    for tab in (tab_a, tab_b):
        (waiting,) = tab.sent[-1]["pending"]
        assert waiting["id"] == record.id and waiting["tool"] == "drop"
        assert 0 < waiting["remaining"] <= 120
    approve = {"op": "decide", "call": record.id, "approve": True, "who": "Ada"}
    edited = {**approve, "request": 1, "where": "notification", "arguments": {"table": "t2"}}
    (first,) = world.ask(tab_a, "tab-a", edited)
    (second,) = world.ask(tab_b, "tab-b", {**approve, "request": 1, "where": "panel"})
    assert first["ok"] is True and second["ok"] is False
    assert decision.state == APPROVED and decision.arguments == {"table": "t2"}
    assert second["decided"].startswith("approved in the notification by Ada after ")
    world.schedule.run()
    for tab in (tab_a, tab_b):
        assert tab.sent[-1]["pending"] == []
        (row,) = tab.sent[-1]["calls"]
        assert row["decided"] == second["decided"]


def test_a_confirmation_decided_in_the_widgets_shows_as_decided_in_the_panel(world):
    panel = world.open("tab-a")
    record = world.call(table="orders")
    decision = world.decision(record)
    assert decision.settle(DENIED, reason="denied in the notebook")
    (late,) = world.ask(
        panel, "tab-a", {"request": 1, "op": "decide", "call": record.id, "approve": True,
                         "where": "notification"}
    )  # fmt: skip
    assert late["ok"] is False and late["decided"].startswith("denied in the notebook's monitor")


def test_front_ends_fed_are_bounded_and_a_reopened_tab_replaces_its_old_comm(world):
    channels = [world.open(f"tab-{n}") for n in range(MAX_PANELS + 10)]
    assert len(world.feed.sessions) == MAX_PANELS
    assert all(c.is_closed for c in channels[:10]) and not channels[10].is_closed
    again = world.open("tab-20")
    assert channels[20].is_closed and not again.is_closed
    assert len(world.feed.sessions) == MAX_PANELS
    again.closed_by("tab-20")
    assert "tab-20" not in world.feed.sessions


def test_a_ten_thousand_call_history_arrives_in_bounded_chunks(world):
    world.app.calls.maxlen = 10_000
    for n in range(10_000):
        world.app.calls.add(CallRecord("tools/call", "drop", {"table": f"t{n}"}, "agent"))
    panel = world.open("tab-a")
    assert len(panel.sent) == 10_000 // MAX_ROWS
    assert panel.sent[0]["more"] == len(panel.sent) - 1
    assert sum(len(m["calls"]) for m in panel.sent) == 10_000
    assert max(len(json.dumps(m)) for m in panel.sent) < MAX_ROWS * 600


def test_open_panel_asks_only_the_front_end_that_ran_the_cell(world):
    tab_a, tab_b = world.open("tab-a"), world.open("tab-b")
    assert world.feed.open_panel("tab-b") is True
    assert tab_b.sent[-1] == {"kind": "open"} and tab_a.sent[-1]["kind"] == "snapshot"
    assert world.feed.open_panel("vscode") is False
    assert world.feed.open_panel(None) is False


def test_open_panel_before_the_front_end_opened_its_feed_opens_it_when_it_does(world):
    # Run All: %mcp monitor runs before the page's comm (opened on %load_ext's hello) arrives.
    assert world.feed.open_panel("tab-a") is False
    panel = world.open("tab-a")
    assert [m["kind"] for m in panel.sent] == ["snapshot", "open"]
    other = world.open("tab-b")
    assert [m["kind"] for m in other.sent] == ["snapshot"]
    again = world.open("tab-a")  # asked once only
    assert [m["kind"] for m in again.sent] == ["snapshot"]
    for n in range(MAX_PANELS * 3):
        world.feed.open_panel(f"gone-{n}")  # bounded: tabs that never come
    assert len(world.feed._wanted) == MAX_PANELS


def test_each_status_is_one_word_the_panel_colours_with_the_words_a_person_reads(world):
    """A call dropped because its client hung up was keyed by its whole status, spaces
    included: the panel could neither colour it nor filter on it."""
    panel = world.open("tab-a")
    world.call(table="gone").finish("dropped: client gone", None)
    world.call(table="kept").finish("done", "ok")
    world.schedule.run()
    rows = {c["args"]: c for c in panel.sent[-1]["calls"]}
    gone, kept = rows['{"table":"gone"}'], rows['{"table":"kept"}']
    assert (gone["status"], gone["label"]) == ("dropped", "dropped: client gone")
    assert (kept["status"], kept["label"]) == ("done", "done")


class Pauses:
    """The kernel's breaks as the feed sees them: the next call, and whether a debugger
    would see it stop."""

    def __init__(self, listening: bool) -> None:
        self.next_call, self.listening = False, listening


@pytest.mark.parametrize("listening", [True, False])
def test_pause_next_call_says_whether_a_debugger_would_see_it(listening):
    """The panel said "Pausing the next call" with no debugger to stop in; the call then
    ran on. The answer now says whether one listens, and the panel words it so."""
    pauses = Pauses(listening)
    world = World(pauses)
    panel = world.open("tab-a")
    (answer,) = world.ask(panel, "tab-a", {"request": 1, "op": "pause", "on": True})
    assert answer["ok"] and answer["on"] and answer["listening"] is listening
    assert pauses.next_call is True
    world.loop.close()
