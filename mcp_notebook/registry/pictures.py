"""matplotlib figures and PIL images as MCP image blocks: PNG, at most ``MAX_SIDE`` pixels.

No IPython: the kernel extension (kernel/rich.py) and an exported notebook
(export/runtime.py) both register :func:`convert` into ``content.CONVERTERS``. matplotlib
and PIL are imported only once the user's code has imported them.
"""

from __future__ import annotations

import base64
import io
import struct
import sys
from typing import Any

MAX_SIDE = 1600  # pixels on the long side of an image sent to a client


def convert(value: Any) -> list[dict[str, Any]] | None:
    """An image block for a figure (or Axes) or a PIL image; None for anything else."""
    figure = figure_of(value)
    if figure is not None:
        return [image_block(figure_png(figure), "image/png")]
    if is_pil(value):
        return [image_block(pil_png(value), "image/png")]
    return None


def image_block(data: bytes, mime: str) -> dict[str, Any]:
    return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime}


# -- matplotlib ----------------------------------------------------------------------------


def figure_of(value: Any) -> Any:
    if "matplotlib" not in sys.modules:
        return None  # nothing can be a figure if matplotlib was never imported
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    while isinstance(value, (Axes, SubFigure)):
        value = value.figure  # up to the figure that holds the axes / sub-figure
    return value if isinstance(value, Figure) else None


def figure_png(figure: Any) -> bytes:
    width, height = figure.get_size_inches() * figure.dpi
    dpi = figure.dpi * min(1.0, MAX_SIDE / max(width, height, 1))
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close(figure)  # else the inline backend shows it again after the next cell
    return buffer.getvalue()


# -- PIL -----------------------------------------------------------------------------------


def is_pil(value: Any) -> bool:
    if "PIL.Image" not in sys.modules:
        return False
    from PIL import Image

    return isinstance(value, Image.Image)


def pil_png(image: Any) -> bytes:
    if max(image.size) > MAX_SIDE:
        image = image.copy()
        image.thumbnail((MAX_SIDE, MAX_SIDE))  # keeps the aspect ratio
    if image.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"):
        image = image.convert("RGBA")  # e.g. CMYK, YCbCr, F: not storable as PNG
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def bounded(data: bytes, mime: str) -> tuple[bytes, str]:
    """An image from a formatter, shrunk (as PNG) if it is larger than ``MAX_SIDE``."""
    size = png_size(data) if mime == "image/png" else None
    if size is not None and max(size) <= MAX_SIDE:
        return data, mime
    try:
        from PIL import Image
    except ImportError:
        return data, mime  # cannot measure or shrink it without Pillow: send it as it is
    try:
        image = Image.open(io.BytesIO(data))
        if max(image.size) <= MAX_SIDE:
            return data, mime
        return pil_png(image), "image/png"
    except Exception:
        return data, mime


def png_size(data: bytes) -> tuple[int, int] | None:
    # The IHDR chunk follows the 8-byte signature: length, "IHDR", width, height.
    if len(data) >= 24 and data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    return None
