"""A widget view's ``<name>.set`` changes only what a person could change in the view's own
controls (mcp_notebook/apps/controls.py): any client of an MCP Apps host can call it, so a
markup-bearing or structural trait, a value out of bounds, a disabled or hidden control are
refused with a -32602 error naming the trait and why, and nothing changes in the notebook.
Through the protocol server, as a host's call arrives."""

from __future__ import annotations

import datetime

import ipywidgets as widgets
import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server
from tests.unit.apps.test_apps import UI_CAPS, apps_valid, ask, handshake

HOSTILE = "<img src=x onerror=\"document.querySelector('.mcp-confirm button').click()\">"


class View:
    """A widget view registered in a fresh notebook, and a UI host's session on it."""

    def __init__(self, root) -> None:
        self.mcp = NotebookMCP()
        self.mcp.app("panel", root, title="Panel")
        self.server = Server(self.mcp.registry, calls=self.mcp.calls)
        self.session = None

    async def set(self, widget, state=None, message=None) -> dict:
        if self.session is None:
            self.session, _ = await handshake(self.server, UI_CAPS)
        arguments = {"model_id": widget.model_id}
        if state is not None:
            arguments["state"] = state
        if message is not None:
            arguments["message"] = message
        params = {"name": "panel.set", "arguments": arguments}
        return await ask(self.server, self.session, "tools/call", params)

    async def refused(self, widget, state=None, message=None) -> str:
        answer = await self.set(widget, state, message)
        assert "error" in answer, answer
        assert answer["error"]["code"] == -32602
        assert answer["error"]["data"]["model_id"] == widget.model_id
        return answer["error"]["message"]

    async def applied(self, widget, state=None, message=None) -> dict:
        answer = await self.set(widget, state, message)
        assert "result" in answer and not answer["result"].get("isError"), answer
        return answer["result"]


async def test_markup_structure_and_bounds_are_refused_and_nothing_changes():
    shown = widgets.HTML("<b>9</b>")
    math = widgets.HTMLMath("$x$")
    label = widgets.Label("total")
    slider = widgets.IntSlider(value=3, min=0, max=20, step=2, description="n")
    box = widgets.VBox([slider, shown, math, label])
    view = View(box)
    for widget in (shown, math, label):
        said = await view.refused(widget, {"value": HOSTILE})
        name = type(widget).__name__
        assert said == f"{name}.value: not settable: a person cannot change it through the view"
    assert (shown.value, math.value, label.value) == ("<b>9</b>", "$x$", "total")
    said = await view.refused(box, {"children": []})
    assert said.startswith("VBox.children: not settable")
    assert box.children == (slider, shown, math, label)  # the view is not emptied
    for trait, value in [
        ("description", HOSTILE),
        ("description_allow_html", True),
        ("max", 1000),
        ("disabled", False),
        ("layout", "IPY_MODEL_x"),
        ("_view_module", "evil"),
    ]:
        said = await view.refused(slider, {trait: value})
        assert said.startswith(f"IntSlider.{trait}: not settable"), said
    assert await view.refused(slider, {"value": 22}) == "IntSlider.value: 22 is above its max 20"
    assert await view.refused(slider, {"value": -2}) == "IntSlider.value: -2 is below its min 0"
    assert (
        await view.refused(slider, {"value": 5}) == "IntSlider.value: 5 is not on its step 2 from 0"
    )
    assert await view.refused(slider, {"value": "4"}) == "IntSlider.value: must be an integer"
    assert await view.refused(slider, {"value": True}) == "IntSlider.value: must be an integer"
    # Atomic: one refused trait, and the allowed one beside it is not applied either.
    await view.refused(slider, {"value": 4, "description": "x"})
    assert (slider.value, slider.description) == (3, "n")
    result = await view.applied(slider, {"value": 4})
    assert "n: 4" in result["content"][0]["text"]
    failed = [c for c in view.mcp.calls if c.target == "panel.set" and c.status == "error"]
    assert len(failed) == 16  # each refusal is in the history, as a failed call


async def test_a_click_reaches_only_an_enabled_visible_button():
    clicks: list[str] = []
    enabled, disabled = widgets.Button(description="Go"), widgets.Button(description="Stop")
    disabled.disabled = True
    hidden = widgets.Button(description="Secret", layout=widgets.Layout(display="none"))
    inside = widgets.Button(description="Inside")
    closed = widgets.VBox([inside], layout=widgets.Layout(visibility="hidden"))
    for button in (enabled, disabled, hidden, inside):
        button.on_click(lambda b: clicks.append(b.description))
    view = View(widgets.VBox([enabled, disabled, hidden, closed]))
    click = {"event": "click"}
    assert await view.refused(disabled, message=click) == (
        "Button: it is disabled: a person cannot change it"
    )
    for button in (hidden, inside):
        said = await view.refused(button, message=click)
        assert said == "Button: it is hidden in the view: a person cannot change it"
    said = await view.refused(enabled, message={"event": "submit"})
    assert said == "Button: its view sends no message {'event': 'submit'}"
    assert clicks == []
    await view.applied(enabled, message=click)
    assert clicks == ["Go"]
    slider = widgets.IntSlider(disabled=True)
    view = View(slider)
    assert await view.refused(slider, {"value": 1}) == (
        "IntSlider: it is disabled: a person cannot change it"
    )
    assert slider.value == 0


async def test_a_text_box_takes_any_text_and_keeps_it_text():
    text, area = widgets.Text(description="name"), widgets.Textarea()
    view = View(widgets.VBox([text, area]))
    result = await view.applied(text, {"value": HOSTILE})
    await view.applied(area, {"value": HOSTILE})
    assert text.value == area.value == HOSTILE
    # What the model reads is the text as typed; the view's state carries it as a value.
    assert f"name: {HOSTILE!r}" in result["content"][0]["text"]
    assert await view.refused(text, {"value": 3}) == "Text.value: must be a string"
    assert await view.refused(text, {"placeholder": HOSTILE}) == (
        "Text.placeholder: not settable: a person cannot change it through the view"
    )


@pytest.mark.parametrize(
    ("make", "good", "bad", "why"),
    [
        (
            lambda: widgets.Dropdown(options=["a", "b"]),
            {"index": 1},
            {"index": 2},
            "Dropdown.index: must be an option's index, 0 to 1",
        ),
        (
            lambda: widgets.Dropdown(options=["a", "b"]),
            {"index": 1},
            {"options": ["<b>x</b>"]},
            "Dropdown.options: not settable: a person cannot change it through the view",
        ),
        (
            lambda: widgets.SelectMultiple(options=["a", "b", "c"]),
            {"index": [0, 2]},
            {"index": [1, 1]},
            "SelectMultiple.index: must be a list of distinct option indices",
        ),
        (
            lambda: widgets.SelectionRangeSlider(options=["a", "b", "c"], index=(0, 1)),
            {"index": [1, 2]},
            {"index": [2, 1]},
            "SelectionRangeSlider.index: its low is above its high",
        ),
        (
            lambda: widgets.FloatSlider(value=2.5, min=0.5, max=10, step=0.5),
            {"value": 3.5},
            {"value": 3.7},
            "FloatSlider.value: 3.7 is not on its step 0.5 from 0.5",
        ),
        (
            lambda: widgets.FloatSlider(value=0.1, step=0.1),
            {"value": 0.3},
            {"value": float("inf")},
            "FloatSlider.value: must be a finite number",
        ),
        (
            lambda: widgets.IntRangeSlider(value=(2, 4), min=0, max=10),
            {"value": [1, 9]},
            {"value": [5, 11]},
            "IntRangeSlider.value: 11 is above its max 10",
        ),
        (
            lambda: widgets.FloatLogSlider(value=10, min=0, max=3),
            {"value": 100.0},
            {"value": 10_000.0},
            "FloatLogSlider.value: 10000.0 is outside 10.0**0.0..10.0**3.0",
        ),
        (
            lambda: widgets.BoundedIntText(value=5, min=0, max=10),
            {"value": 7},
            {"value": 70},
            "BoundedIntText.value: 70 is above its max 10",
        ),
        (
            lambda: widgets.Checkbox(),
            {"value": True},
            {"value": "yes"},
            "Checkbox.value: must be true or false",
        ),
        (
            lambda: widgets.Combobox(options=["red", "blue"], ensure_option=True),
            {"value": "blue"},
            {"value": "green"},
            "Combobox.value: 'green' is not one of its options",
        ),
        (
            lambda: widgets.ColorPicker(),
            {"value": "#ff0000"},
            {"value": "url(javascript:x)"},
            None,  # the Color trait's own refusal
        ),
        (
            lambda: widgets.DatePicker(min=datetime.date(2026, 1, 1)),
            {"value": {"year": 2026, "month": 5, "date": 2}},
            {"value": {"year": 2025, "month": 0, "date": 1}},
            "DatePicker.value: 2025-01-01 is below its min 2026-01-01",
        ),
        (
            lambda: widgets.TagsInput(allowed_tags=["x", "y"]),
            {"value": ["x"]},
            {"value": ["<img>"]},
            "TagsInput.value: holds a tag that is not one of its allowed tags",
        ),
        (
            lambda: widgets.Tab([widgets.Label("one"), widgets.Label("two")]),
            {"selected_index": 1},
            {"selected_index": 2},
            "Tab.selected_index: must be an option's index, 0 to 1",
        ),
        (
            lambda: widgets.IntProgress(value=3),
            None,
            {"value": 9},
            "IntProgress.value: not settable: a person cannot change it through the view",
        ),
    ],
)
async def test_each_control_takes_what_a_person_can_give_it(make, good, bad, why):
    widget = make()
    view = View(widgets.VBox([widget]))
    before = widget.get_state()
    said = await view.refused(widget, bad)
    if why is not None:
        assert said == why
    assert widget.get_state() == before
    if good is not None:
        await view.applied(widget, good)
        assert widget.get_state() != before


async def test_a_huge_trait_name_is_not_echoed_whole():
    slider = widgets.IntSlider()
    said = await View(slider).refused(slider, {"x" * 100_000: 1})
    assert said.startswith("IntSlider.xxx") and len(said) < 200


async def test_an_unknown_widget_is_a_precise_error():
    view = View(widgets.IntSlider())
    other = widgets.IntSlider()
    said = await view.refused(other, {"value": 1})
    assert said == f"no widget {other.model_id!r} in the view ui://notebook/panel"


async def test_the_set_tool_is_app_only_and_names_no_view_of_its_own():
    view = View(widgets.IntSlider())
    session, _ = await handshake(view.server, UI_CAPS)
    listed = (await ask(view.server, session, "tools/list"))["result"]["tools"]
    tools = {t["name"]: t for t in listed}
    assert tools["panel"]["_meta"]["ui"] == {"resourceUri": "ui://notebook/panel"}
    # Hosts offer every tool that names a resourceUri as an app to open: the setter is
    # only the view's own helper, callable by the app and hidden from the model.
    assert tools["panel.set"]["_meta"]["ui"] == {"visibility": ["app"]}
    apps_valid(tools["panel.set"]["_meta"]["ui"], "McpUiToolMeta")


def test_a_views_document_holds_only_its_own_widgets():
    elsewhere = widgets.Textarea("the arguments of another client's pending call")
    slider = widgets.IntSlider(description="n")
    mcp = NotebookMCP()
    mcp.app("panel", widgets.VBox([slider]))
    page = mcp.registry.resources["ui://notebook/panel"].read()["contents"][0]["text"]
    assert slider.model_id in page
    assert elsewhere.model_id not in page and "another client" not in page
    result = mcp.registry.tools["panel.set"].result("")  # what each set call sends back
    assert elsewhere.model_id not in result["_meta"]["mcp-notebook/view"]["widgets"]["state"]
