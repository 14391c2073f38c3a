"""pandas DataFrames and Series, recognised without importing pandas."""

from __future__ import annotations

from typing import Any


def is_frame(value: Any) -> bool:
    return _is_pandas(value, "DataFrame")


def is_series(value: Any) -> bool:
    return _is_pandas(value, "Series")


def _is_pandas(value: Any, name: str) -> bool:
    # By name, so that pandas need not be imported; subclasses (geopandas...) count too.
    return any(
        kind.__name__ == name and kind.__module__.split(".")[0] == "pandas"
        for kind in type(value).__mro__
    )


def shows_index(frame: Any) -> bool:
    """Whether a frame's index is data to serve as columns.

    An unnamed integer index is row numbering: leave it out, as ``to_csv(index=False)``
    does. A named, non-integer (dates, labels) or multi-level index is data: keep it.
    """
    index = frame.index
    return bool(index.nlevels > 1 or index.name is not None or index.dtype.kind not in "iu")
