"""Has a frame changed since the last cell? A fingerprint cheap enough for every cell."""

from __future__ import annotations

from typing import Any

from .frames import is_series

FULL_HASH_CELLS = 50_000  # frames up to this many cells are hashed whole after each cell
SAMPLE_HASH_ROWS = 64  # otherwise: the first and last 16 rows and 32 spread in between


def fingerprint(frame: Any) -> tuple[Any, ...]:
    """Cheap enough to run after every cell; see ``kernel/live.py`` for the trade-off."""
    import numpy as np
    import pandas as pd

    if is_series(frame):
        frame = frame.to_frame()
    rows, width = frame.shape
    shape = (frame.shape, tuple(str(d) for d in frame.dtypes))
    names = tuple(map(str, frame.columns))
    if rows * width <= FULL_HASH_CELLS:
        part = frame
    else:
        edge = SAMPLE_HASH_ROWS // 4
        spread = np.linspace(0, rows - 1, SAMPLE_HASH_ROWS - 2 * edge).astype(np.int64)
        spots = np.unique(np.concatenate([np.arange(edge), np.arange(rows - edge, rows), spread]))
        part = frame.iloc[spots]
    try:
        digest = pd.util.hash_pandas_object(part, index=True).to_numpy().tobytes()
    except TypeError:  # unhashable cells (lists, dicts): their text stands in
        digest = repr(part.to_numpy().tolist()).encode()
    return shape, names, hash(digest)
