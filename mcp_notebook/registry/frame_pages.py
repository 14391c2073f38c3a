"""A frame cut into bounded pages and rendered as CSV, JSON records or markdown.

A page is cut with ``iloc`` before anything is rendered, so its cost grows with the page,
not with the frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ..wire import jsontext
from .coercion import records
from .frames import is_series, shows_index
from .signature import ArgumentError

PAGE_ROWS = 1000  # rows of a plain read and the default page size
MAX_ROWS = 10_000  # the largest page a query may ask for
TOOL_ROWS = 50  # rows of a DataFrame a tool returns (markdown table and structured rows)
SAMPLE_ROWS = 5  # sample rows in the schema
MAX_CELL = 200  # characters of one markdown cell before it is cut
FORMATS = {"csv": "text/csv", "json": "application/json", "markdown": "text/markdown"}
PAGE_META = "mcp-notebook/page"
ROWS_META = "mcp-notebook/rows"


def format_for(fmt: str | None, mime_type: str | None = None) -> str:
    """The format to render: the given one, else the one a mime type implies, else CSV."""
    if fmt is None:
        by_mime = {mime: name for name, mime in FORMATS.items()}
        return by_mime.get(mime_type or "", "csv")
    if fmt not in FORMATS:
        raise ArgumentError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return fmt


def template_uri(uri: str) -> str:
    """The URI template of a frame's pages."""
    return uri + "{?offset,limit,columns,format}"


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


def window(
    frame: Any, offset: int = 0, limit: int = PAGE_ROWS, columns: list[str] | None = None
) -> Any:
    """Rows ``offset:offset+limit`` (and only ``columns``), index as columns if it is data.

    ``iloc`` with a slice is a view (a copy-on-write reference in pandas 3): only the rows
    of the page are ever copied, by ``reset_index`` or the column selection.
    """
    if columns:
        positions = _column_positions(frame, columns)
        part = frame.iloc[offset : offset + limit, positions]
    else:
        part = frame.iloc[offset : offset + limit]
    return part.reset_index() if shows_index(part) else part


def _column_positions(frame: Any, wanted: list[str]) -> list[int]:
    names = [str(c) for c in frame.columns]
    missing = [c for c in wanted if c not in names]
    if missing:
        known = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
        raise ArgumentError(f"no column {', '.join(missing)}; the columns are {known}")
    return [names.index(c) for c in wanted]


# -- rendering -----------------------------------------------------------------------------


def render(part: Any, fmt: str) -> str:
    """A (small) frame as CSV, JSON records or a markdown table."""
    if fmt == "csv":
        return str(part.to_csv(index=False, lineterminator="\n"))
    if fmt == "json":
        return jsontext.dumps_text(records(part))
    return markdown_table(part)


def markdown_table(part: Any) -> str:
    if shows_index(part):
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
            "served": shows_index(frame),
        },
        memoryBytes=int(frame.memory_usage(index=True, deep=False).sum()),
        sample=records(frame.iloc[:SAMPLE_ROWS]),
    )
    if uri:
        described["pages"] = {
            "uriTemplate": template_uri(uri),
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
    part = part.reset_index() if shows_index(part) else part
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
