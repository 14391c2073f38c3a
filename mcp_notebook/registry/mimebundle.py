"""A value's representations as IPython's display formatter computes them.

Takes the formatter as an argument (the kernel's, with the notebook's own registered
printers), so this module imports no IPython itself: tool results (kernel/rich.py) and app
views (apps/render.py) share it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def mime_bundle(value: Any, formatter: Any, mimes: Iterable[str]) -> dict[str, Any]:
    """What ``DisplayFormatter.format`` computes for ``mimes``, minus
    ``_ipython_display_``: that one would display the value under the running cell instead
    of returning it."""
    wanted = tuple(mimes)
    data = formatter.mimebundle_formatter(value, include=set(wanted), exclude=None)
    if isinstance(data, tuple):
        data = data[0]
    bundle = dict(data or {})
    for mime in wanted:
        printer = formatter.formatters.get(mime)
        if mime in bundle or printer is None:
            continue
        shown = printer(value)
        if isinstance(shown, tuple):  # (data, metadata), e.g. an Image with a width
            shown = shown[0]
        if shown is not None:
            bundle[mime] = shown
    return bundle
