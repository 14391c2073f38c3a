"""Values stay text in a view: every pandas ``Styler`` a view draws escapes what it shows.

pandas' ``Styler`` writes cell values and labels into its HTML as they are (``escape=`` is
off by default, and each ``format()`` call without it turns it off again for the cells it
formats), so a result or an argument holding ``<img src=x onerror=...>`` was live markup in
the view. While a view is drawn (:func:`escaping`), every Styler rendered escapes, as
``format(escape="html")`` does, the strings it formats before its formatter sees them: a
formatter the author set still adds its own markup around the escaped text. Strings inside
lists, tuples and dicts (the JSON a client sends) are escaped too, and a formatter's
non-text output is escaped as the text it becomes. Tooltips are escaped for where pandas
puts them (a CSS string, or a ``title`` attribute).

This holds for a Styler anywhere in what a view shows: the view's value, the one a view
function returns, one built inside an object's ``_repr_html_``. It is a wrapper around
pandas' renderer, installed once and inert outside a view's drawing (a context variable),
so the notebook's own display of a Styler is unchanged.
"""

from __future__ import annotations

import contextlib
import contextvars
import html
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

# The Styler's formatter tables (pandas 2.x; the name tables came in 2.2).
_FORMATS = (
    "_display_funcs",
    "_display_funcs_index",
    "_display_funcs_columns",
    "_display_funcs_index_names",
    "_display_funcs_column_names",
)
_drawing: contextvars.ContextVar[bool] = contextvars.ContextVar("drawing_a_view", default=False)
_install = threading.Lock()


class _Escaped(str):
    """Text already escaped: markupsafe (pandas' own ``escape="html"``) leaves it so."""

    __slots__ = ()

    def __html__(self) -> str:
        return self


def escaped(value: Any) -> Any:
    """``value`` with its strings HTML-escaped, also inside lists, tuples and dicts."""
    if hasattr(value, "__html__"):
        return value  # markup by the convention jinja and markupsafe keep (never JSON)
    if isinstance(value, str):
        return _Escaped(html.escape(value))
    if type(value) in (list, tuple):
        return type(value)(escaped(item) for item in value)
    if type(value) is dict:
        return {escaped(key): escaped(item) for key, item in value.items()}
    return value


def _escaping(formatter: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def shown(value: Any) -> Any:
        given = escaped(value)
        text = formatter(given)
        if isinstance(text, str) or (text is given and given is not value):
            return text  # the formatter's markup around escaped text, or escaped items
        return html.escape(str(text))  # anything else becomes text in the template

    return shown


class _EscapingFormats(Mapping[Any, Callable[[Any], Any]]):
    """A formatter table whose formatters see escaped values (what rendering reads)."""

    def __init__(self, formats: Any) -> None:
        self._formats = formats

    def __getitem__(self, key: Any) -> Callable[[Any], Any]:
        return _escaping(self._formats[key])  # a defaultdict: the default formatter

    def __iter__(self) -> Iterator[Any]:
        return iter(self._formats)

    def __len__(self) -> int:
        return len(self._formats)


def _css_string(value: Any) -> Any:
    """Text safe inside pandas' ``content: "..."`` in a ``<style>`` element."""
    if not isinstance(value, str):
        return value
    for char, escape in (("\\", "\\5c "), ('"', "\\22 "), ("<", "\\3c "), (">", "\\3e ")):
        value = value.replace(char, escape)
    return value.replace("\n", "\\a ").replace("\r", "\\d ")


def _attribute(value: Any) -> Any:
    return html.escape(value) if isinstance(value, str) else value


def _escaping_render(render: Callable[..., Any]) -> Callable[..., Any]:
    def escaping_render(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _drawing.get():
            return render(self, *args, **kwargs)
        tables = {name: getattr(self, name) for name in _FORMATS if hasattr(self, name)}
        tooltips: Any = getattr(self, "tooltips", None)
        texts = getattr(tooltips, "tt_data", None)
        try:
            for name, table in tables.items():
                setattr(self, name, _EscapingFormats(table))
            if texts is not None:
                title = getattr(tooltips, "as_title_attribute", False)
                each = getattr(texts, "map", None) or texts.applymap  # pandas 2.0: applymap
                tooltips.tt_data = each(_attribute if title else _css_string)
            return render(self, *args, **kwargs)
        finally:
            for name, table in tables.items():
                setattr(self, name, table)
            if texts is not None:
                tooltips.tt_data = texts

    escaping_render.escapes = True  # type: ignore[attr-defined]
    return escaping_render


def _install_once() -> None:
    if "pandas" not in sys.modules:
        return  # no Styler exists; the first view drawn after pandas' import installs it
    from pandas.io.formats.style_render import StylerRenderer

    with _install:
        if not getattr(StylerRenderer._render, "escapes", False):
            StylerRenderer._render = _escaping_render(StylerRenderer._render)


@contextlib.contextmanager
def escaping() -> Iterator[None]:
    """While a view is drawn: Stylers rendered on this thread escape what they show."""
    _install_once()
    token = _drawing.set(True)
    try:
        yield
    finally:
        _drawing.reset(token)
