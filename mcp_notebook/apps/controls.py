"""What a widget view's ``<name>.set`` may change: what a person could change through the
view's own controls, and nothing else.

``<name>.set`` is a tool: whoever talks to the server through an MCP Apps host can call
it, not only the view. So its arguments are checked against an allow-list keyed by the
control the front end draws (its ``_view_name`` in ``@jupyter-widgets/controls``): a
slider's ``value`` within its min, max and step, a selection's ``index`` within its
options, a text box's ``value`` (an input's text, never markup), a checkbox's ``value``,
a click on an enabled, visible button... Everything else (an ``HTML``/``HTMLMath``/
``Label`` value, descriptions, layout, style, children, options, bounds, ``disabled``) is
refused, as is any change to a disabled or hidden control, with a -32602 error naming the
trait and why. An out-of-range value is refused, not clamped: the client learns that its
value was not the one applied. An anywidget's own traits stay settable (its front end sets
them; its author decides how they are shown): its base traits (layout...) do not.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

from ..protocol.jsonrpc import RpcError, invalid_params

CONTROLS = "@jupyter-widgets/controls"
ANYWIDGET = "anywidget"

# (the widget, the value sent) -> why it is refused, or None.
Check = Callable[[Any, Any], str | None]


def _is_number(value: Any, integral: bool) -> bool:
    if isinstance(value, bool):
        return False
    if integral:
        return isinstance(value, int)
    return isinstance(value, (int, float)) and math.isfinite(value)


def _bounds(widget: Any, value: Any) -> str | None:
    low, high = getattr(widget, "min", None), getattr(widget, "max", None)
    if low is not None and value < low:
        return f"{value} is below its min {low}"
    if high is not None and value > high:
        return f"{value} is above its max {high}"
    return None


def _on_step(widget: Any, value: Any) -> str | None:
    step: Any = getattr(widget, "step", None)
    low = getattr(widget, "min", None) or 0
    if not _is_number(step, False) or step <= 0:
        return None  # no step (or "any"): every value in bounds is one
    steps = (value - low) / step
    if abs(steps - round(steps)) > 1e-9 * max(1.0, abs(steps)):
        return f"{value!r} is not on its step {step!r} from {low!r}"
    return None


def _number(integral: bool, stepped: bool = False) -> Check:
    kind = "an integer" if integral else "a finite number"

    def check(widget: Any, value: Any) -> str | None:
        if not _is_number(value, integral):
            return f"must be {kind}"
        return _bounds(widget, value) or (_on_step(widget, value) if stepped else None)

    return check


def _log_slider(widget: Any, value: Any) -> str | None:
    if not _is_number(value, False) or value <= 0:
        return "must be a positive number"
    exponent = math.log(value, widget.base)
    if exponent < widget.min - 1e-9 or exponent > widget.max + 1e-9:
        return (
            f"{value!r} is outside {widget.base!r}**{widget.min!r}..{widget.base!r}**{widget.max!r}"
        )
    return None


def _pair(integral: bool) -> Check:
    one = _number(integral, stepped=True)

    def check(widget: Any, value: Any) -> str | None:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            return "must be a [low, high] pair"
        problem = one(widget, value[0]) or one(widget, value[1])
        if problem is None and value[0] > value[1]:
            problem = f"its low {value[0]!r} is above its high {value[1]!r}"
        return problem

    return check


def _boolean(widget: Any, value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _text(widget: Any, value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def _combobox(widget: Any, value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    if widget.ensure_option and value and value not in widget.options:
        return f"{value!r} is not one of its options"
    return None


def _index_in(count: int, value: Any) -> str | None:
    if not _is_number(value, True) or not 0 <= value < count:
        return f"must be an option's index, 0 to {count - 1}" if count else "it has no options"
    return None


def _index(widget: Any, value: Any) -> str | None:
    return _index_in(len(widget.options), value)


def _indices(widget: Any, value: Any) -> str | None:
    if not isinstance(value, (list, tuple)) or len(set(map(repr, value))) != len(value):
        return "must be a list of distinct option indices"
    return next((p for p in (_index_in(len(widget.options), v) for v in value) if p), None)


def _index_pair(widget: Any, value: Any) -> str | None:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        return "must be a [low, high] pair of option indices"
    problem = _index(widget, value[0]) or _index(widget, value[1])
    return problem or (None if value[0] <= value[1] else "its low is above its high")


def _selected(allow_none: bool) -> Check:
    def check(widget: Any, value: Any) -> str | None:
        if value is None and allow_none:
            return None
        return _index_in(len(widget.children), value)

    return check


def _deserialized(widget: Any, value: Any) -> str | None:
    """A date or time: as the widget reads it, and within its bounds."""
    read = widget.trait_metadata("value", "from_json")
    try:
        parsed = read(value, widget) if read is not None else value
        return None if parsed is None else _bounds(widget, parsed)
    except Exception:  # a shape from_json cannot read, or values that do not compare
        return "is not a value this control holds"


def _strings(widget: Any, value: Any) -> str | None:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        return "must be a list of strings"
    allowed = getattr(widget, "allowed_tags", None)
    if allowed and any(v not in allowed for v in value):
        return "holds a tag that is not one of its allowed tags"
    return None


def _numbers(integral: bool) -> Check:
    one = _number(integral)

    def check(widget: Any, value: Any) -> str | None:
        if not isinstance(value, (list, tuple)):
            return "must be a list of numbers"
        return next((p for p in map(lambda v: one(widget, v), value) if p), None)

    return check


_SLIDER: dict[str, Check] = {"value": _number(True, stepped=True)}
_TEXT: dict[str, Check] = {"value": _text}
_CHOICE: dict[str, Check] = {"index": _index}
_ON: dict[str, Check] = {"value": _boolean}
# What a person changes through each control, and how the value is checked.
SETTABLE: dict[str, dict[str, Check]] = {
    "IntSliderView": _SLIDER,
    "FloatSliderView": {"value": _number(False, stepped=True)},
    "FloatLogSliderView": {"value": _log_slider},
    "IntRangeSliderView": {"value": _pair(True)},
    "FloatRangeSliderView": {"value": _pair(False)},
    "IntTextView": {"value": _number(True)},
    "FloatTextView": {"value": _number(False)},
    "PlayView": {"value": _number(True), "playing": _boolean, "repeat": _boolean},
    "CheckboxView": _ON,
    "ToggleButtonView": _ON,
    "TextView": _TEXT,
    "TextareaView": _TEXT,
    "PasswordView": _TEXT,
    "ComboboxView": {"value": _combobox},
    "ColorPickerView": _TEXT,  # the widget's Color trait checks it is a colour
    "DropdownView": _CHOICE,
    "RadioButtonsView": _CHOICE,
    "SelectView": _CHOICE,
    "ToggleButtonsView": _CHOICE,
    "SelectionSliderView": _CHOICE,
    "SelectMultipleView": {"index": _indices},
    "SelectionRangeSliderView": {"index": _index_pair},
    "DatePickerView": {"value": _deserialized},
    "TimeView": {"value": _deserialized},
    "DatetimeView": {"value": _deserialized},
    "TagsInputView": {"value": _strings},
    "ColorsInputView": {"value": _strings},
    "IntsInputView": {"value": _numbers(True)},
    "FloatsInputView": {"value": _numbers(False)},
    "TabView": {"selected_index": _selected(False)},
    "AccordionView": {"selected_index": _selected(True)},
}
# The messages each control's front end sends when a person uses it.
MESSAGES: dict[str, tuple[dict[str, Any], ...]] = {
    "ButtonView": ({"event": "click"},),
    "TextView": ({"event": "submit"},),
    "PasswordView": ({"event": "submit"},),
    "ComboboxView": ({"event": "submit"},),
}


def hidden(root: Any) -> set[str]:
    """The model ids of the tree's widgets a person cannot see: laid out with
    ``display: none`` or ``visibility: hidden``, or inside a container that is."""
    from ipywidgets import Widget

    out: set[str] = set()
    seen: set[str] = set()
    queue: deque[tuple[Any, bool]] = deque([(root, False)])
    while queue:
        widget, inside_hidden = queue.popleft()
        if not isinstance(widget, Widget) or widget.model_id in seen:
            continue
        seen.add(widget.model_id)
        layout = getattr(widget, "layout", None)
        shut = inside_hidden or (
            getattr(layout, "display", None) == "none"
            or getattr(layout, "visibility", None) == "hidden"
        )
        if shut:
            out.add(widget.model_id)
        children = getattr(widget, "children", ()) or ()
        queue.extend((child, shut) for child in children)
    return out


def refuse(widget: Any, why: str, trait: str | None = None) -> RpcError:
    """The -32602 refusal naming the widget's class and the trait (a client's key: cut)."""
    name = type(widget).__name__
    trait = trait if trait is None or len(trait) <= 80 else trait[:79] + "…"
    data = {"model_id": widget.model_id, **({"trait": trait} if trait else {})}
    return invalid_params(f"{name}.{trait}: {why}" if trait else f"{name}: {why}", data)


def check(widget: Any, state: dict[str, Any], message: Any, invisible: bool) -> None:
    """Raise the -32602 error that refuses this change, if it is not one a person could
    make in the view's own controls."""
    if not state and message is None:
        return
    if invisible:
        raise refuse(widget, "it is hidden in the view: a person cannot change it")
    if getattr(widget, "disabled", False) is True:
        raise refuse(widget, "it is disabled: a person cannot change it")
    module = widget._view_module
    if module == ANYWIDGET:
        _check_anywidget(widget, state)
        return
    view = widget._view_name if module == CONTROLS else None
    allowed = SETTABLE.get(view or "", {})
    for key in sorted(state):
        value_check = allowed.get(key)
        if value_check is None:
            why = "not settable: a person cannot change it through the view"
            raise refuse(widget, why, key)
        problem = value_check(widget, state[key])
        if problem is not None:
            raise refuse(widget, problem, key)
    if message is not None and message not in MESSAGES.get(view or "", ()):
        raise refuse(widget, f"its view sends no message {_shown(message)}")


def _check_anywidget(widget: Any, state: dict[str, Any]) -> None:
    from ipywidgets import DOMWidget

    base = set(DOMWidget.class_traits(sync=True))
    for key in sorted(state):
        own = key in widget.keys and key not in base and not key.startswith("_")
        if not own or widget.trait_metadata(key, "read_only"):
            raise refuse(widget, "not one of its own settable traits", key)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"
