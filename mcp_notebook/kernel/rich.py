"""Figures, images and anything IPython can display, as MCP content blocks.

Registered into ``registry.content.CONVERTERS`` by the kernel extension, so the core never
imports IPython. A tool that returns

- a matplotlib ``Figure`` (or ``Axes``) gets a PNG of the figure at its own size and dpi,
  rendered by Agg (``savefig``: no window, whatever the backend), scaled down to at most
  ``MAX_SIDE`` pixels on its long side; a pyplot figure is then closed, so the inline
  backend does not also show it under the next cell;
- a PIL image gets a PNG, shrunk to ``MAX_SIDE`` the same way;
- an ``IPython.display.Audio`` gets an audio block;
- anything else with a rich representation (``_repr_png_``, ``_repr_jpeg_``,
  ``_repr_svg_``, ``_repr_markdown_``, ``_repr_html_``, ``_repr_latex_``, ``_repr_json_``,
  ``_repr_mimebundle_`` or a formatter registered for its type, as ``IPython.display``
  objects have) goes through the shell's display formatter; the first of ``PREFERRED``
  it produces becomes the block: images as image blocks, SVG as an embedded
  ``image/svg+xml`` text resource (few clients take SVG images), text kinds as text.

Values with only a plain-text repr are left to the default conversion (None here).
"""

from __future__ import annotations

import base64
import sys
from typing import Any

from ..registry.coercion import json_safe
from ..registry.mimebundle import mime_bundle

# Figures and PIL images need no IPython: registry/pictures.py, which an export uses too.
from ..registry.pictures import MAX_SIDE as MAX_SIDE
from ..registry.pictures import bounded as _bounded
from ..registry.pictures import figure_of as _figure
from ..registry.pictures import figure_png as _figure_png
from ..registry.pictures import image_block as _image
from ..registry.pictures import is_pil as _is_pil
from ..registry.pictures import pil_png as _pil_png
from ..wire import jsontext

PREFERRED = (
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/svg+xml",
    "text/markdown",
    "text/html",
    "text/latex",
    "application/json",
)
_PLAIN = (str, bytes, bytearray, int, float, bool, dict, list, tuple, set, frozenset)


def convert(value: Any) -> list[dict[str, Any]] | None:
    """Content blocks for ``value``, or None when it has no rich representation."""
    if value is None or isinstance(value, _PLAIN):
        return None
    figure = _figure(value)
    if figure is not None:
        return [_image(_figure_png(figure), "image/png")]
    if _is_pil(value):
        return [_image(_pil_png(value), "image/png")]
    audio = _audio(value)
    if audio is not None:
        return [audio]
    return _formatted(value)


# -- IPython display objects ---------------------------------------------------------------


def _audio(value: Any) -> dict[str, Any] | None:
    if "IPython.display" not in sys.modules:
        return None
    from IPython.display import Audio

    if not isinstance(value, Audio) or not value.data:
        return None
    mime = value.mimetype or "audio/wav"
    return {"type": "audio", "data": base64.b64encode(value.data).decode("ascii"), "mimeType": mime}


def _formatter() -> Any:
    from IPython.core.getipython import get_ipython  # IPython 8 (Python 3.10) and 9

    shell = get_ipython()
    return getattr(shell, "display_formatter", None)


def _has_rich_repr(value: Any, formatter: Any) -> bool:
    # Checked on the class, as IPython does, so proxies with __getattr__ do not match.
    kind = type(value)
    if hasattr(kind, "_repr_mimebundle_"):
        return True
    for mime in PREFERRED:
        printer = formatter.formatters.get(mime)
        if printer is None:
            continue
        if getattr(kind, printer.print_method, None) is not None:
            return True
        try:
            printer.lookup(value)
            return True
        except KeyError:
            continue
    return False


def _formatted(value: Any) -> list[dict[str, Any]] | None:
    formatter = _formatter()
    if formatter is None or not _has_rich_repr(value, formatter):
        return None
    bundle = mime_bundle(value, formatter, PREFERRED)
    for mime in PREFERRED:
        shown = bundle.get(mime)
        if shown is None:
            continue
        if mime == "image/svg+xml":
            svg = shown.decode() if isinstance(shown, bytes) else shown
            resource = {"uri": "display:image.svg", "mimeType": mime, "text": svg}
            return [{"type": "resource", "resource": resource}]
        if mime.startswith("image/"):
            # Formatters hand back bytes, or base64 text (as in a notebook file).
            raw = shown if isinstance(shown, bytes) else base64.b64decode(shown)
            return [_image(*_bounded(raw, mime))]
        if mime == "application/json":
            try:
                text = jsontext.dumps_text(json_safe(shown))
            except (TypeError, ValueError):  # e.g. a NaN: not JSON, try the next format
                continue
            return [{"type": "text", "text": text}]
        return [{"type": "text", "text": shown if isinstance(shown, str) else str(shown)}]
    return None
