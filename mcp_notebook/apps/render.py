"""Anything a notebook can display, as an HTML fragment for an app view.

The order: a widget tree (its state, embedded: :mod:`.widgets`); a plotly figure (with
plotly.js inline, so no CDN); a matplotlib figure or axes and a PIL image (PNG as a
``data:`` URI); then whatever IPython's display formatter makes of it (``_repr_html_``
of a DataFrame or Styler, ``IPython.display.HTML``/``SVG``/``Image``/``Markdown``...,
``_repr_mimebundle_``), HTML first, then images, then text. Nothing here fetches
anything; what the HTML itself loads from elsewhere is found by :mod:`.csp`.
"""

from __future__ import annotations

import base64
import html
import io
import sys
from dataclasses import dataclass
from typing import Any

from ..registry.mimebundle import mime_bundle

# What the display formatter may produce, best first for a web page.
PREFERRED = (
    "text/html",
    "image/svg+xml",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "text/markdown",
    "text/latex",
    "text/plain",
)


@dataclass(frozen=True)
class Fragment:
    """A view's body: HTML, and whether it holds ipywidgets state to bring to life."""

    html: str
    widgets: bool = False


def fragment(value: Any) -> Fragment:
    """The HTML that shows ``value`` in a view's document body."""
    if _is_widget(value):
        from .widgets import widget_fragment

        return Fragment(widget_fragment(value), widgets=True)
    if isinstance(value, str):
        return Fragment(_pre(value))
    plotly = _plotly_html(value)
    if plotly is not None:
        return Fragment(plotly)
    figure = _figure(value)
    if figure is not None:
        return Fragment(_img(_figure_png(figure), "image/png"))
    if _is_pil(value):
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return Fragment(_img(buffer.getvalue(), "image/png"))
    return Fragment(_formatted(value))


def _is_widget(value: Any) -> bool:
    if "ipywidgets" not in sys.modules:
        return False  # nothing is a widget if ipywidgets was never imported
    from ipywidgets import Widget

    return isinstance(value, Widget)


def _pre(text: str) -> str:
    return f'<pre class="mcp-notebook-text">{html.escape(text)}</pre>'


def _img(data: bytes, mime: str) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return f'<img class="mcp-notebook-image" alt="" src="data:{mime};base64,{encoded}">'


def _plotly_html(value: Any) -> str | None:
    if "plotly" not in sys.modules:
        return None
    from plotly.basedatatypes import BaseFigure

    if not isinstance(value, BaseFigure):
        return None
    text: str = value.to_html(full_html=False, include_plotlyjs=True)
    return text


def _figure(value: Any) -> Any:
    if "matplotlib" not in sys.modules:
        return None
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    while isinstance(value, (Axes, SubFigure)):
        value = value.figure
    return value if isinstance(value, Figure) else None


def _figure_png(figure: Any) -> bytes:
    # Agg through savefig: no window, whatever the backend; the figure stays open, since a
    # view is drawn again at every read.
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def _is_pil(value: Any) -> bool:
    if "PIL.Image" not in sys.modules:
        return False
    from PIL import Image

    return isinstance(value, Image.Image)


def _formatter() -> Any:
    from IPython import get_ipython
    from IPython.core.formatters import DisplayFormatter

    shell = get_ipython()
    formatter = getattr(shell, "display_formatter", None)
    return formatter if formatter is not None else DisplayFormatter()


def _bundle(value: Any) -> dict[str, Any]:
    return mime_bundle(value, _formatter(), PREFERRED)


def _formatted(value: Any) -> str:
    bundle = _bundle(value)
    for mime in PREFERRED:
        shown = bundle.get(mime)
        if shown is None:
            continue
        if mime == "text/html":
            return shown if isinstance(shown, str) else shown.decode()
        if mime == "image/svg+xml":
            return shown.decode() if isinstance(shown, bytes) else shown
        if mime.startswith("image/"):
            raw = shown if isinstance(shown, bytes) else base64.b64decode(shown)
            return _img(raw, mime)
        return _pre(shown if isinstance(shown, str) else str(shown))
    return _pre(repr(value))


def plain_text(value: Any) -> str | None:
    """The value's ``text/plain`` form, for a tool's text content (None if it has none
    worth sending, e.g. only the default ``<object at 0x...>`` repr)."""
    if isinstance(value, str):
        return value
    try:
        shown = _bundle(value).get("text/plain")
    except Exception:
        return None
    if not isinstance(shown, str) or (shown.startswith("<") and " at 0x" in shown):
        return None
    return shown
