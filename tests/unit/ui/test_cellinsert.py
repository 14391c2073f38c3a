"""The monitor's "Insert as cell" (ui/cellinsert.py) and the kernel's registry of front ends
with mcp_notebook's extension (ui/frontends.py), without a kernel: fake comms and front
ends, a clock turned by hand. Several front ends on one kernel: the one a click came from
is asked, and the note is honest whoever closes what first. The same flow through a real
kernel: tests/kernel/test_monitor.py; in JupyterLab and Notebook 7:
tests/e2e/browser/test_lab_insert_cell.py."""

from __future__ import annotations

from typing import Any

from mcp_notebook.ui import frontends
from mcp_notebook.ui.cellinsert import MAX_CODE, CellInsert
from mcp_notebook.ui.frontends import HELLO, TARGET, WAIT, Frontends


class FakeComm:
    """A comm, kernel side; ``closed_by``/``message_from`` are what the comm manager does
    when a front end closes it or sends on it."""

    def __init__(self, target_name: str = "", data: Any = None) -> None:
        self.target_name, self.data = target_name, data
        self.sent: list[Any] = []
        self.msg_callback: Any = None
        self.close_callback: Any = None
        self.is_closed = False

    def on_msg(self, callback: Any) -> None:
        self.msg_callback = callback

    def on_close(self, callback: Any) -> None:
        self.close_callback = callback

    def send(self, data: Any) -> None:
        self.sent.append(data)

    def close(self) -> None:
        self.is_closed = True

    def message_from(self, session: str, data: Any) -> None:
        self.msg_callback(message(session, {"comm_id": "c", "data": data}))

    def closed_by(self, session: str) -> None:
        if not self.is_closed:  # the manager forgets a comm at its first close
            self.is_closed = True
            if self.close_callback is not None:
                self.close_callback(message(session, {"comm_id": "c", "data": {}}))


def message(session: str, content: dict) -> dict:
    return {"header": {"session": session}, "content": content}


class Clock:
    """``later`` for the registry: nothing fires until the test turns the clock."""

    def __init__(self) -> None:
        self.pending: list[list[Any]] = []

    def __call__(self, seconds: float, callback: Any) -> Any:
        entry = [seconds, callback, False]
        self.pending.append(entry)

        class Handle:
            def cancel(self) -> None:
                entry[2] = True

        return Handle()

    def turn(self, seconds: float) -> None:
        for entry in list(self.pending):
            if not entry[2] and entry[0] <= seconds:
                entry[2] = True
                entry[1]()


class Kernel:
    """The kernel side of the comms: what the registry opened, and its comm target."""

    def __init__(self) -> None:
        self.opened: list[FakeComm] = []
        self.targets: dict[str, Any] = {}
        self.clock = Clock()
        self.frontends = Frontends(
            open_comm=self.open, register=self.targets.__setitem__, later=self.clock
        )

    def open(self, *, target_name: str, data: Any) -> FakeComm:
        self.opened.append(FakeComm(target_name, data))
        return self.opened[-1]

    def hellos(self) -> list[FakeComm]:
        return [c for c in self.opened if c.target_name == HELLO]

    def announce(self, session: str) -> FakeComm:
        """A front end with the extension opens its comm to the kernel (index.ts)."""
        channel = FakeComm(TARGET)
        self.targets[TARGET](channel, message(session, {"comm_id": session, "data": {}}))
        return channel


class Click:
    """A click on the button, as the front end ``session`` sends it."""

    def __init__(self, insert: CellInsert) -> None:
        self.insert = insert

    def __call__(self, session: str) -> None:
        click = message(session, {"data": {"method": "custom", "content": {"event": "click"}}})
        self.insert.button.comm.handle_msg({**click, "buffers": []})


CODE = "# call #7\nadd(\n    a=1,\n)\n"


def shown(code: str | None = CODE) -> tuple[CellInsert, Kernel, Click]:
    kernel = Kernel()
    insert = CellInsert(kernel.frontends)
    insert.show(code, 7)
    return insert, kernel, Click(insert)


def test_hidden_until_a_call_with_code_is_shown():
    insert = CellInsert(Kernel().frontends)
    assert insert.layout.display == "none"
    insert.show(CODE, 7)
    assert insert.layout.display is None
    insert.show(None)
    assert insert.layout.display == "none"


def test_a_click_asks_the_announced_front_end_it_came_from_and_its_answer_fills_the_note():
    insert, kernel, click = shown()
    lab = kernel.announce("lab")
    click("lab")
    assert kernel.hellos() == []  # known already: no hello
    assert lab.sent == [{"request": 1, "code": CODE}]
    assert "Asked the notebook" in insert.note.value
    lab.message_from("lab", {"request": 1, "inserted": True, "index": 2})
    assert "Inserted below the current cell" in insert.note.value


def test_a_front_end_without_the_extension_closing_first_hides_no_answer():
    """The bug this design fixes: VS Code (or a tab with the extension disabled) closes
    the kernel's comm before the tab that clicked answers."""
    insert, kernel, click = shown()
    click("lab")  # not announced yet: the kernel asks who has the extension
    (hello,) = kernel.hellos()
    assert hello.data == {"hello": kernel.frontends.token}
    hello.closed_by("vscode")  # first, unanswered: says nothing about the tab that clicked
    assert "Asked the notebook" in insert.note.value
    lab = kernel.announce("lab")  # the clicking tab's answer to the hello
    assert lab.sent == [{"request": 1, "code": CODE}]
    lab.message_from("lab", {"request": 1, "inserted": True, "index": 4})
    assert "Inserted below the current cell" in insert.note.value


def test_only_the_front_end_that_clicked_is_asked():
    insert, kernel, click = shown()
    one, two = kernel.announce("tab-1"), kernel.announce("tab-2")
    click("tab-2")
    assert one.sent == [] and len(two.sent) == 1  # no second copy in the other tab
    one.message_from("tab-1", {"request": 1, "inserted": True})  # not its to answer
    assert "Asked the notebook" in insert.note.value
    two.message_from("tab-2", {"request": 1, "inserted": True})
    assert "Inserted below" in insert.note.value


def test_the_clicking_front_end_closing_the_hello_unannounced_has_no_extension():
    insert, kernel, click = shown()
    kernel.announce("lab")  # another tab has it: that does not make this one able to
    click("vscode")
    (hello,) = kernel.hellos()
    hello.closed_by("vscode")
    assert "extension is not active in the front end you clicked in" in insert.note.value
    assert "mcp.calls.find(7).to_cell()" in insert.note.value


def test_no_answer_at_all_is_said_after_the_wait_not_left_at_asked():
    insert, kernel, click = shown()
    click("lab")
    kernel.clock.turn(WAIT - 1)
    assert "Asked the notebook" in insert.note.value
    kernel.clock.turn(WAIT)
    assert f"No answer from the front end you clicked in within {WAIT:g} s" in insert.note.value
    assert "mcp.calls.find(7).to_cell()" in insert.note.value
    # An announced front end that never answers the request says the same.
    lab = kernel.announce("lab")
    click("lab")
    assert len(lab.sent) == 1
    kernel.clock.turn(WAIT)
    assert "No answer" in insert.note.value
    lab.message_from("lab", {"request": lab.sent[0]["request"], "inserted": True})
    assert "No answer" in insert.note.value  # too late: the note stays


def test_an_announced_front_end_that_goes_away_is_no_answer_and_forgotten():
    insert, kernel, click = shown()
    lab = kernel.announce("lab")
    click("lab")
    lab.closed_by("lab")  # the page closed its comm (reloaded, kernel changed)
    assert "No answer" in insert.note.value
    assert kernel.frontends.sessions == []


def test_a_refusal_shows_its_reason_escaped():
    insert, kernel, click = shown()
    lab = kernel.announce("lab")
    click("lab")
    lab.message_from("lab", {"request": 1, "inserted": False, "error": "<b>bad</b>"})
    assert "&lt;b&gt;bad&lt;/b&gt;" in insert.note.value and "<b>bad" not in insert.note.value
    click("lab")
    lab.message_from("lab", {"request": 2, "inserted": "yes"})
    assert "no reason given" in insert.note.value


def test_malformed_answers_are_ignored_and_the_registry_stays_bounded():
    kernel = Kernel()
    lab = kernel.announce("lab")
    outcomes: list[Any] = []
    kernel.frontends.ask("lab", "1", outcomes.append)
    for data in (None, [1], {"request": [1]}, {"request": "1"}, {"request": 99}, "x"):
        lab.message_from("lab", data)
    assert outcomes == []
    lab.message_from("lab", {"request": 1, "inserted": True})
    assert [o.state for o in outcomes] == [frontends.INSERTED]
    # A comm opened without a session in its header cannot be told apart: refused.
    nameless = FakeComm(TARGET)
    kernel.targets[TARGET](nameless, {"content": {}})
    assert nameless.is_closed and kernel.frontends.sessions == ["lab"]
    # Reloaded pages announce again under new sessions: the oldest are dropped.
    comms = [kernel.announce(f"page-{i}") for i in range(frontends.MAX_FRONTENDS + 5)]
    assert len(kernel.frontends.sessions) == frontends.MAX_FRONTENDS
    assert lab.is_closed and comms[0].is_closed and not comms[-1].is_closed


def test_code_too_long_for_the_extension_is_not_sent():
    insert, kernel, click = shown("x" * (MAX_CODE + 1))
    lab = kernel.announce("lab")
    click("lab")
    assert lab.sent == [] and kernel.hellos() == []
    assert "Too long to insert" in insert.note.value


def test_another_call_clears_the_previous_answer_and_a_late_one_does_not_show():
    insert, kernel, click = shown()
    lab = kernel.announce("lab")
    click("lab")
    insert.show("other()\n", 8)
    assert insert.note.value == ""
    lab.message_from("lab", {"request": 1, "inserted": True})
    assert insert.note.value == ""  # about call 7's code, no longer shown
