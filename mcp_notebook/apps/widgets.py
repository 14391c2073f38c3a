"""ipywidgets views: a widget tree embedded with its state, and the tool that brings the
controls a user moves in the host back to the kernel.

The fragment is ipywidgets' own embedding (``ipywidgets.embed``: the manager state of the
tree and a view spec per root), which the bundled HTML manager renders. When a control
changes in the host, the view calls ``<name>.set`` (app-only) through the host with the
model id and the changed traits; it runs on the kernel thread like any call (monitor,
confirmation, history), sets the traits as a notebook front end would (so ``observe``
callbacks run and the notebook's own copy moves too), and returns the tree's new state,
which the view applies.
"""

from __future__ import annotations

import html
import json
import re
from collections import deque
from typing import Any

from traitlets import TraitError

from ..protocol.jsonrpc import invalid_params
from ..registry import Tool
from ..registry.views import RESULT_VIEW_KEY
from . import controls

_TAGS = re.compile(r"<style.*?</style>|<[^>]+>", re.DOTALL | re.IGNORECASE)
STATE_MIME = "application/vnd.jupyter.widget-state+json"
VIEW_MIME = "application/vnd.jupyter.widget-view+json"


def _script(mime: str, value: Any) -> str:
    text = json.dumps(value).replace("</", "<\\/")
    return f'<script type="{mime}">{text}</script>'


def _embedded(widget: Any) -> dict[str, Any]:
    """ipywidgets' embedding of the tree: its manager state and a view spec per root.

    Embedding leaves out traits still at their defaults, for the front end's model knows
    them; a model of another module than ipywidgets' own (an anywidget: its ``_esm`` and
    every trait of the Python class) knows none, so those models keep their whole state.
    """
    from ipywidgets.embed import dependency_state, embed_data

    # Only the tree's own models: embed_data's default state is every widget of the kernel
    # (another view's, a confirmation card's arguments...), which this view must not carry.
    data: dict[str, Any] = embed_data(views=[widget], state=dependency_state(widget))
    models = data["manager_state"]["state"]
    custom = [k for k, m in models.items() if not m["model_module"].startswith("@jupyter-widgets/")]
    if custom:
        full = dependency_state(widget, drop_defaults=False)
        whole = embed_data(views=[widget], drop_defaults=False, state=full)["manager_state"][
            "state"
        ]
        for key in custom:
            models[key] = whole[key]
    return data


def manager_state(widget: Any) -> dict[str, Any]:
    """The embeddable state of every model ``widget`` depends on (children, layouts...)."""
    state: dict[str, Any] = _embedded(widget)["manager_state"]
    return state


def widget_fragment(widget: Any) -> str:
    data = _embedded(widget)
    views = "".join(_script(VIEW_MIME, spec) for spec in data["view_specs"])
    return _script(STATE_MIME, data["manager_state"]) + views


def _widgets_by_id(root: Any) -> dict[str, Any]:
    """The widgets of the tree, by model id (what the view may set, and nothing else)."""
    from ipywidgets import Widget

    found: dict[str, Any] = {}
    queue = deque([root])  # breadth first: in the order the tree lays them out
    while queue:
        widget = queue.popleft()
        if not isinstance(widget, Widget) or widget.model_id in found:
            continue
        found[widget.model_id] = widget
        for key in widget.keys:
            value = getattr(widget, key, None)
            items = value if isinstance(value, (list, tuple)) else [value]
            queue.extend(v for v in items if isinstance(v, Widget))
    return found


def describe(root: Any) -> str:
    """One line per control with a value: what the model (or a text-only host) reads."""
    from ipywidgets import HTML, DOMWidget, HTMLMath, Label, Widget

    base = set(DOMWidget.class_traits(sync=True))
    lines = []
    for widget in _widgets_by_id(root).values():
        value = getattr(widget, "value", None)  # a trait or not (Dropdown syncs its index)
        if value is None and not widget._model_module.startswith("@jupyter-widgets/"):
            lines.extend(_own_traits(widget, base))  # an anywidget's: its class's traits
            continue
        if value is None or isinstance(value, Widget):
            continue
        if isinstance(widget, (HTML, HTMLMath, Label)):  # what the view shows: its text
            text = " ".join(_TAGS.sub(" ", html.unescape(str(value))).split())
            if text:
                lines.append(text[:300] + ("…" if len(text) > 300 else ""))
            continue
        label = getattr(widget, "description", "") or type(widget).__name__
        if isinstance(value, str) and len(value) > 200:
            value = value[:199] + "…"
        lines.append(f"{label}: {value!r}")
    return "\n".join(lines)


def _own_traits(widget: Any, base: set[str]) -> list[str]:
    name = type(widget).__name__
    lines = []
    for key in widget.keys:
        if key.startswith("_") or key in base:
            continue
        value = repr(getattr(widget, key, None))
        lines.append(f"{name}.{key}: {value[:199] + '…' if len(value) > 200 else value}")
    return lines


def set_tool(view: Any) -> Tool:
    """``<name>.set``: apply controls changed in the host to the notebook's widgets
    (``view`` is the :class:`~.view.AppView`, untyped here: view.py imports this module)."""
    root = view.source

    def set_widgets(
        model_id: str, state: dict[str, Any] | None = None, message: dict[str, Any] | None = None
    ) -> str:
        """Set traits of a widget of this view, as the user changed them in the host, or
        pass it a front end's message (a Button's click).

        Args:
            model_id: the widget's model id in the view
            state: the changed traits and their new values
            message: a custom message from the widget's view, e.g. {"event": "click"}
        """
        widget = _widgets_by_id(root).get(model_id)
        if widget is None:
            raise invalid_params(
                f"no widget {model_id!r} in the view {view.uri}", {"model_id": model_id}
            )
        if state is not None and not isinstance(state, dict):
            raise invalid_params("state must be an object of traits")
        controls.check(widget, state or {}, message, model_id in controls.hidden(root))
        try:
            if state:
                widget.set_state(state)  # as a front end's update: observers run here, now
        except TraitError as exc:  # a value the trait itself refuses (a colour, a type)
            raise controls.refuse(widget, str(exc)) from None
        if message is not None:
            widget._handle_custom_msg(message, [])  # e.g. Button.on_click callbacks
        return describe(root)

    def result_meta(value: Any) -> dict[str, Any]:
        return {RESULT_VIEW_KEY: {"widgets": manager_state(root)}}

    return Tool(
        set_widgets,
        f"{view.name}.set",
        title=f"{view.title}: set a control",
        visibility=("app",),
        view_uri=view.uri,
        view_meta=result_meta,
        shows_view=False,  # the view's own helper, not an app to open
    )
