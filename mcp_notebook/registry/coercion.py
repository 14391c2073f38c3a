"""Python values <-> JSON for the types notebooks pass around.

In: ``pydantic_hint`` swaps a parameter's annotation for one pydantic validates from JSON
and describes with a schema that says so -- ``bytes`` as base64 (``contentEncoding``), a
pandas ``DataFrame`` as an array of row objects. ``datetime``, ``date``, ``time`` and
``Path`` need nothing: pydantic already gives them ``format: date-time`` / ``date`` /
``time`` / ``path`` and parses the strings.

Out: ``json_safe`` turns results into JSON values: NaT/NA -> null, Timestamps -> ISO
strings, numpy scalars -> numbers. A NaN or an infinity stays what it is, so that encoding
refuses it (:class:`NotJsonError`): JSON has no such numbers, and turning them into null
would hide a bug in the result. Only table cells (``json_scalar``, ``records``) map NaN to
null: in a DataFrame NaN is how pandas writes a missing value.

pandas and numpy stay optional: they are recognised by module and type name.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError, to_jsonable_python

from ..errors import McpNotebookError
from .frames import is_series, shows_index


def _b64decode(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)  # a Python caller passed bytes already
    if not isinstance(value, str):
        raise PydanticCustomError("base64", "expected a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise PydanticCustomError("base64", "invalid base64 data") from None


def _b64encode(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


Base64Bytes = Annotated[
    bytes,
    PlainValidator(_b64decode),
    PlainSerializer(_b64encode, return_type=str),
    WithJsonSchema({"type": "string", "contentEncoding": "base64"}),
]


def _to_frame(value: Any) -> Any:
    import pandas as pd  # only reached for a DataFrame annotation, so pandas is there

    if isinstance(value, pd.DataFrame):
        return value
    if not isinstance(value, list) or not all(isinstance(row, dict) for row in value):
        raise PydanticCustomError("dataframe", "expected an array of row objects")
    return pd.DataFrame.from_records(value)


def _from_frame(value: Any) -> list[dict[str, Any]]:
    return records(value)


_FRAME_SCHEMA = {
    "type": "array",
    "items": {"type": "object"},
    "description": "Table rows, one object per row (column name -> value)",
}


def _is_frame_type(hint: Any) -> bool:
    return (
        isinstance(hint, type)
        and hint.__name__ == "DataFrame"
        and hint.__module__.split(".")[0] == "pandas"
    )


def pydantic_hint(hint: Any) -> Any:
    """The annotation pydantic should see for ``hint`` (itself unless we coerce it)."""
    if hint is bytes:
        return Base64Bytes
    if _is_frame_type(hint):
        return Annotated[
            hint,
            PlainValidator(_to_frame),
            PlainSerializer(_from_frame),
            WithJsonSchema(_FRAME_SCHEMA),
        ]
    return hint


# -- out ---------------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return type(value).__name__


def _is_missing(value: Any) -> bool:
    # pandas.NA, pandas.NaT and numpy's NaT, without importing either library.
    name = _type_name(value)
    if name in ("NAType", "NaTType"):
        return True
    return name in ("datetime64", "timedelta64") and str(value) == "NaT"


def _fallback(value: Any) -> Any:
    """What pydantic cannot serialise itself: numpy and pandas values."""
    if _is_missing(value):
        return None
    module = type(value).__module__.split(".")[0]
    name = _type_name(value)
    if module == "numpy":
        if name in ("datetime64", "timedelta64"):
            return str(value)  # ISO 8601 at the value's own precision
        if hasattr(value, "tolist"):  # ndarray and numpy scalars
            return value.tolist()
    if module == "pandas":
        if name == "DataFrame":
            return records(value)
        if name == "Series":
            return value.tolist()
        if hasattr(value, "isoformat"):
            return value.isoformat()
        return str(value)  # Period, Interval, ...
    return repr(value)


def _without_missing(value: Any) -> Any:
    # NaT subclasses datetime, which pydantic serialises without asking the fallback (and
    # fails on); replace it before handing the value over. Only done after such a failure.
    if _is_missing(value):
        return None
    if isinstance(value, dict):
        return {k: _without_missing(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_without_missing(v) for v in value]
    return value


class NotJsonError(McpNotebookError, ValueError):
    """A result that JSON cannot carry (a NaN or an infinity, or nesting too deep)."""


def not_json(problem: Exception) -> NotJsonError:
    """The encoder's complaint, as a sentence a tool's author can act on."""
    text = str(problem)
    if "Out of range float" in text:
        return NotJsonError(
            "the result holds a non-finite float (NaN or Infinity), which is not JSON: "
            "return None for a missing value, or a string"
        )
    return NotJsonError(f"the result is not JSON: {text}")


def json_safe(value: Any) -> Any:
    """A JSON-compatible copy of dataclasses, models, dates and numpy/pandas values (a NaN
    or infinity is kept, for the encoder to refuse)."""
    try:
        return to_jsonable_python(value, fallback=_fallback, inf_nan_mode="constants")
    except (TypeError, ValueError):
        value = _without_missing(value)
        return to_jsonable_python(value, fallback=_fallback, inf_nan_mode="constants")


def json_scalar(value: Any) -> Any:
    """``json_safe`` for one cell of a table, with the common cases first (it runs per cell)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return json_safe(value)


def records(frame: Any) -> list[dict[str, Any]]:
    """JSON-safe row objects: NaN/NaT/NA -> None, dates -> ISO strings, numpy -> Python."""
    if is_series(frame):
        frame = frame.to_frame()
    if shows_index(frame):
        frame = frame.reset_index()
    names = [str(c) for c in frame.columns]
    columns = [_column(frame.iloc[:, i]) for i in range(frame.shape[1])]
    return (
        [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]
        if columns
        else []
    )


def _column(series: Any) -> list[Any]:
    """One column as JSON values, converted per dtype rather than per cell where possible."""
    kind = getattr(series.dtype, "kind", "O")
    missing = series.isna().to_numpy()
    if kind == "f":  # NaN and NA are masked first: math.isfinite(NA) would raise
        return [
            None if gone or not math.isfinite(v) else v
            for v, gone in zip(series.tolist(), missing, strict=True)
        ]
    values: list[Any]
    if kind in "iub":
        values = series.tolist()  # Python ints and bools (nullable ones hold NA: masked)
    elif kind in "mM":
        values = [v.isoformat() for v in series]  # Timestamp / Timedelta, NaT masked below
    else:  # object, str, category, period, interval, complex...
        values = [json_scalar(v) for v in series.tolist()]
    if not missing.any():
        return values
    return [None if gone else v for v, gone in zip(values, missing, strict=True)]
