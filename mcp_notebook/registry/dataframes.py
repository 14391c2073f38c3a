"""pandas DataFrames as MCP resources and tool results, a bounded page at a time.

``mcp.resource(df, name="sales")`` serves three things (see ``frame_components``):

- ``df://sales``: the first ``PAGE_ROWS`` rows in the resource's format (CSV by default),
  so that a read of a million-row frame stays small; ``_meta["mcp-notebook/page"]`` says
  which rows came back, how many there are and the URI of the next page.
- ``df://sales{?offset,limit,columns,format}``: any page (``limit`` up to ``MAX_ROWS``),
  some columns (comma-separated names), as ``csv``, ``json`` (records) or ``markdown``.
- ``df://sales/schema``: columns, dtypes, null counts, row count and a few sample rows
  (listed as a template without variables: see ``frame_components``).

A page is cut with ``iloc`` before anything is rendered, so its cost grows with the page,
not with the frame. pandas is optional: frames are recognised by type name, and nothing
here imports pandas unless a frame was given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ..wire import jsontext
from .coercion import json_scalar
from .signature import ArgumentError

PAGE_ROWS = 1000  # rows of a plain read and the default page size
MAX_ROWS = 10_000  # the largest page a query may ask for
TOOL_ROWS = 50  # rows of a DataFrame a tool returns (markdown table and structured rows)
SAMPLE_ROWS = 5  # sample rows in the schema
MAX_CELL = 200  # characters of one markdown cell before it is cut
FORMATS = {"csv": "text/csv", "json": "application/json", "markdown": "text/markdown"}
PAGE_META = "mcp-notebook/page"
ROWS_META = "mcp-notebook/rows"


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


def format_for(fmt: str | None, mime_type: str | None = None) -> str:
    """The format to render: the given one, else the one a mime type implies, else CSV."""
    if fmt is None:
        by_mime = {mime: name for name, mime in FORMATS.items()}
        return by_mime.get(mime_type or "", "csv")
    if fmt not in FORMATS:
        raise ArgumentError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return fmt


@dataclass(frozen=True)
class Rendered:
    """Text ready to serve: ``resource_contents`` uses its own mime type and ``_meta``."""

    text: str
    mime_type: str
    meta: dict[str, Any] | None = None


@dataclass(frozen=True)
class Unframed:
    """What a frame's live variable holds now that is no frame: served by its own type,
    not under the frame's declared mime type."""

    value: Any


# -- slicing -------------------------------------------------------------------------------


def _shows_index(frame: Any) -> bool:
    # An unnamed integer index is row numbering: leave it out, as ``to_csv(index=False)``
    # does. A named, non-integer (dates, labels) or multi-level index is data: keep it.
    index = frame.index
    return index.nlevels > 1 or index.name is not None or index.dtype.kind not in "iu"


def window(frame: Any, offset: int = 0, limit: int = PAGE_ROWS, columns: list[str] | None = None):
    """Rows ``offset:offset+limit`` (and only ``columns``), index as columns if it is data.

    ``iloc`` with a slice is a view (a copy-on-write reference in pandas 3): only the rows
    of the page are ever copied, by ``reset_index`` or the column selection.
    """
    if columns:
        positions = _column_positions(frame, columns)
        part = frame.iloc[offset : offset + limit, positions]
    else:
        part = frame.iloc[offset : offset + limit]
    return part.reset_index() if _shows_index(part) else part


def _column_positions(frame: Any, wanted: list[str]) -> list[int]:
    names = [str(c) for c in frame.columns]
    missing = [c for c in wanted if c not in names]
    if missing:
        known = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
        raise ArgumentError(f"no column {', '.join(missing)}; the columns are {known}")
    return [names.index(c) for c in wanted]


def records(frame: Any) -> list[dict[str, Any]]:
    """JSON-safe row objects: NaN/NaT/NA -> None, dates -> ISO strings, numpy -> Python."""
    if is_series(frame):
        frame = frame.to_frame()
    if _shows_index(frame):
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
    if kind in "iub":
        values = series.tolist()  # Python ints and bools (nullable ones hold NA: masked)
    elif kind in "mM":
        values = [v.isoformat() for v in series]  # Timestamp / Timedelta, NaT masked below
    else:  # object, str, category, period, interval, complex...
        values = [json_scalar(v) for v in series.tolist()]
    if not missing.any():
        return values
    return [None if gone else v for v, gone in zip(values, missing, strict=True)]


# -- rendering -----------------------------------------------------------------------------


def render(part: Any, fmt: str) -> str:
    """A (small) frame as CSV, JSON records or a markdown table."""
    if fmt == "csv":
        return part.to_csv(index=False, lineterminator="\n")
    if fmt == "json":
        return jsontext.dumps_text(records(part))
    return markdown_table(part)


def markdown_table(part: Any) -> str:
    if _shows_index(part):
        part = part.reset_index()
    names = [str(c) for c in part.columns]
    lines = [_md_row(names), "|" + "---|" * len(names)]
    lines += [_md_row([_md_cell(v) for v in row.values()]) for row in records(part)]
    return "\n".join(lines)


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _md_cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else jsontext.dumps_text(value)
    text = text.replace("\r", " ").replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def page(
    frame: Any,
    *,
    offset: int = 0,
    limit: int = PAGE_ROWS,
    columns: list[str] | None = None,
    fmt: str = "csv",
    base_uri: str | None = None,
) -> Rendered:
    """One page of ``frame``; with ``base_uri`` the ``_meta`` names the next page's URI."""
    if offset < 0:
        raise ArgumentError("offset must be 0 or more")
    if not 1 <= limit <= MAX_ROWS:
        raise ArgumentError(f"limit must be between 1 and {MAX_ROWS}")
    total = len(frame)
    part = window(frame, offset, limit, columns)
    shown = len(part)
    text = render(part, fmt)
    following = offset + shown if offset + shown < total else None
    info: dict[str, Any] = {"offset": offset, "limit": limit, "rows": shown, "totalRows": total}
    if following is not None and base_uri is not None:
        query = f"offset={following}&limit={limit}"
        if columns:  # names may hold "&", "=" or spaces: percent-encode all but the commas
            query += "&columns=" + quote(",".join(columns), safe=",")
        info["next"] = f"{base_uri}?{query}&format={fmt}"
    if fmt == "markdown" and (offset or following is not None):
        text += "\n\n" + _page_note(offset, shown, total, info.get("next"))
    return Rendered(text, FORMATS[fmt], {PAGE_META: info})


def _page_note(offset: int, shown: int, total: int, following: str | None) -> str:
    if not shown:
        return f"_No rows at offset {offset}: the frame has {total} rows._"
    note = f"_Rows {offset + 1}-{offset + shown} of {total}"
    return note + (f"; next page: {following}_" if following else "._")


def schema(frame: Any, uri: str | None = None) -> dict[str, Any]:
    """Columns, dtypes, null counts, the row count and a few sample rows."""
    columns = [
        {"name": str(name), "dtype": str(column.dtype), "nulls": int(column.isna().sum())}
        for name, column in frame.items()
    ]
    described: dict[str, Any] = {}
    if uri:
        described["uri"] = uri
    described.update(
        rows=len(frame),
        columns=columns,
        index={
            "names": [None if n is None else str(n) for n in frame.index.names],
            "dtype": str(frame.index.dtype),
            "served": _shows_index(frame),
        },
        memoryBytes=int(frame.memory_usage(index=True, deep=False).sum()),
        sample=records(frame.iloc[:SAMPLE_ROWS]),
    )
    if uri:
        described["pages"] = {
            "uriTemplate": _template_uri(uri),
            "defaultLimit": PAGE_ROWS,
            "maxLimit": MAX_ROWS,
            "formats": list(FORMATS),
        }
    return described


def estimated_size(frame: Any, fmt: str, sample: int = 100) -> int:
    """Bytes a plain read returns: exact up to ``sample`` rows, else extrapolated.

    The first ``min(len, PAGE_ROWS)`` rows are what a read returns; ``sample`` of them,
    evenly spaced, are rendered and their average row length scaled up.
    """
    rows = min(len(frame), PAGE_ROWS)
    if rows <= sample:
        return len(render(window(frame, 0, rows), fmt).encode())
    step = max(1, rows // sample)
    part = frame.iloc[0:rows:step]
    part = part.reset_index() if _shows_index(part) else part
    empty = len(render(part.iloc[:0], fmt).encode())
    body = len(render(part, fmt).encode()) - empty
    return empty + round(body / len(part) * rows)


# -- tool results --------------------------------------------------------------------------


def tool_view(value: Any, rows: int = TOOL_ROWS) -> tuple[str, list[dict[str, Any]], int]:
    """A markdown table of the first ``rows`` rows (with a note), those rows, and the total."""
    frame = value.to_frame() if is_series(value) else value
    total = len(frame)
    head = frame.iloc[:rows]
    text = markdown_table(head)
    left = total - len(head)
    if left > 0:
        text += f"\n\n_Showing the first {len(head)} of {total} rows ({left} more not shown)._"
    return text, records(head), total


# -- change detection ----------------------------------------------------------------------

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


# -- components ----------------------------------------------------------------------------


def _template_uri(uri: str) -> str:
    return uri + "{?offset,limit,columns,format}"


def _split_columns(columns: str) -> list[str] | None:
    return [c.strip() for c in columns.split(",") if c.strip()] or None


def frame_components(
    reader: Callable[[], Any],
    *,
    name: str,
    uri: str,
    fmt: str,
    current: Any = None,
    title: str | None = None,
    description: str | None = None,
    annotations: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
    size: int | None = None,
) -> list[Any]:
    """The resource, page template and schema template of a frame ``reader()`` returns.

    ``current`` is the frame as registered (None for a live variable): it gives the size
    estimate and the row count in the description.
    """
    # Imported here: components imports content, which imports this module.
    from .components import Resource, ResourceTemplate

    def frame() -> Any:
        value = reader()
        if not (is_frame(value) or is_series(value)):
            raise TypeError(f"{name} holds a {type(value).__name__}, not a DataFrame")
        return value.to_frame() if is_series(value) else value

    def read() -> Any:
        value = reader()
        if is_frame(value) or is_series(value):
            return page(frame(), fmt=fmt, base_uri=uri)
        return Unframed(value)  # a live variable that holds something else now

    def read_page(
        offset: int = 0, limit: int = PAGE_ROWS, columns: str = "", format: str = fmt
    ) -> Rendered:
        chosen = format_for(format or fmt)
        return page(
            frame(),
            offset=offset,
            limit=limit,
            columns=_split_columns(columns),
            fmt=chosen,
            base_uri=uri,
        )

    def read_schema() -> Rendered:
        text = jsontext.dumps_text(schema(frame(), uri))
        return Rendered(text, "application/json")

    def complete_columns(prefix: str) -> list[str]:
        done, _, typed = prefix.rpartition(",")
        lead = done + "," if done else ""
        return [lead + str(c) for c in frame().columns if str(c).startswith(typed)]

    schema_uri, template = uri + "/schema", _template_uri(uri)
    if description is None:
        description = f"A DataFrame as {fmt}"
        if current is not None:
            description += f" ({len(current)} rows, {current.shape[1]} columns)"
    if current is None or len(current) > PAGE_ROWS:
        # The agent must know that a plain read is not the whole frame.
        description = description.rstrip(". ") + (
            f". A read returns at most the first {PAGE_ROWS} rows; read other rows with "
            f"{template} and the columns and dtypes at {schema_uri}."
        )
    if size is None and current is not None:
        size = estimated_size(current, fmt)
    return [
        Resource(
            uri,
            name,
            read,
            title=title,
            description=description,
            mime_type=FORMATS[fmt],
            size=size,
            annotations=annotations,
            meta=meta,
        ),
        ResourceTemplate(
            template,
            name,
            read_page,
            title=title,
            description=(
                f"Rows of {name}: offset (from 0), limit (1-{MAX_ROWS}, default {PAGE_ROWS}), "
                f"columns (comma-separated names), format ({', '.join(FORMATS)})"
            ),
            mime_type=FORMATS[fmt],
            annotations=annotations,
            completers={"format": list(FORMATS), "columns": complete_columns},
        ),
        # A template without variables (RFC 6570 allows it) rather than a second resource:
        # it shares the frame's name, so removing or re-registering the frame takes it
        # along, and resources/list keeps one entry per registered frame.
        ResourceTemplate(
            schema_uri,
            name,
            read_schema,
            title=f"{title or name}: schema",
            description=f"Columns, dtypes, null counts, row count and sample rows of {name}",
            mime_type="application/json",
        ),
    ]
