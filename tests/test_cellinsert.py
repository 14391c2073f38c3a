"""The monitor's "Insert as cell" button (ui/cellinsert.py) without a kernel: what it sends
on the comm to mcp_notebook's JupyterLab extension and what its note says for each answer.
The same flow through a real kernel: tests/kernel/test_monitor.py; in JupyterLab:
tests/browser/test_lab_insert_cell.py."""

from __future__ import annotations

from typing import Any

from mcp_notebook.ui.cellinsert import MAX_CODE, TARGET, CellInsert


class FakeComm:
    def __init__(self, target_name: str, data: Any) -> None:
        self.target_name, self.data = target_name, data
        self.msg_callbacks: list[Any] = []
        self.close_callbacks: list[Any] = []

    def on_msg(self, callback: Any) -> None:
        self.msg_callbacks.append(callback)

    def on_close(self, callback: Any) -> None:
        self.close_callbacks.append(callback)

    # What the kernel's comm manager does when the front end answers or closes it.
    def answer(self, data: Any) -> None:
        for callback in self.msg_callbacks:
            callback({"content": {"comm_id": "c", "data": data}})

    def closed(self) -> None:
        for callback in self.close_callbacks:
            callback({"content": {"comm_id": "c", "data": {}}})


class Opener:
    def __init__(self) -> None:
        self.comms: list[FakeComm] = []

    def __call__(self, *, target_name: str, data: Any) -> FakeComm:
        self.comms.append(FakeComm(target_name, data))
        return self.comms[-1]


CODE = "# call #7\nadd(\n    a=1,\n)\n"


def shown(code: str | None = CODE) -> tuple[CellInsert, Opener]:
    opener = Opener()
    insert = CellInsert(opener)
    insert.show(code, 7)
    return insert, opener


def test_hidden_until_a_call_with_code_is_shown():
    insert = CellInsert(Opener())
    assert insert.layout.display == "none"
    insert.show(CODE, 7)
    assert insert.layout.display is None
    insert.show(None)
    assert insert.layout.display == "none"


def test_a_click_opens_one_comm_with_the_code_and_the_answer_fills_the_note():
    insert, opener = shown()
    insert.button.click()
    (comm,) = opener.comms
    assert comm.target_name == TARGET == "mcp_notebook.cells"
    assert comm.data == {"code": CODE}
    assert "Asked the notebook" in insert.note.value
    comm.answer({"inserted": True, "index": 2})
    comm.closed()  # the extension closes it after answering: the answer stays
    assert "Inserted below the current cell" in insert.note.value


def test_a_refusal_shows_its_reason_escaped():
    insert, opener = shown()
    insert.button.click()
    opener.comms[0].answer({"inserted": False, "error": "<b>bad</b>"})
    assert "&lt;b&gt;bad&lt;/b&gt;" in insert.note.value and "<b>bad" not in insert.note.value
    insert.button.click()
    opener.comms[1].answer(["not", "a", "dict"])
    assert "no reason given" in insert.note.value


def test_a_close_without_an_answer_means_no_extension_and_points_to_to_cell():
    insert, opener = shown()
    insert.button.click()
    opener.comms[0].closed()
    assert "extension is not active" in insert.note.value
    assert "mcp.calls.find(7).to_cell()" in insert.note.value


def test_code_too_long_for_the_extension_is_not_sent():
    insert, opener = shown("x" * (MAX_CODE + 1))
    insert.button.click()
    assert opener.comms == []
    assert "Too long to insert" in insert.note.value


def test_another_call_clears_the_previous_answer():
    insert, opener = shown()
    insert.button.click()
    opener.comms[0].closed()
    insert.show("other()\n", 8)
    assert insert.note.value == ""
