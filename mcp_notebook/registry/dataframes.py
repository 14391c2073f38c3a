"""pandas DataFrames as MCP resources and tool results, a bounded page at a time.

``mcp.resource(df, name="sales")`` serves three things (see ``frame_components``):

- ``df://sales``: the first ``PAGE_ROWS`` rows in the resource's format (CSV by default),
  so that a read of a million-row frame stays small; ``_meta["mcp-notebook/page"]`` says
  which rows came back, how many there are and the URI of the next page.
- ``df://sales{?offset,limit,columns,format}``: any page (``limit`` up to ``MAX_ROWS``),
  some columns (comma-separated names), as ``csv``, ``json`` (records) or ``markdown``.
- ``df://sales/schema``: columns, dtypes, null counts, row count and a few sample rows
  (listed as a template without variables: see ``frame_components``).

This module is the public face of the frame support; the work is done by modules that
import each other one way only (no module of ``registry/`` imports this one):

- ``frames``: is it a DataFrame or Series (by type name, so pandas is never imported here)?
- ``coercion``: ``records``, a frame as JSON row objects (with ``json_safe``, which it needs).
- ``frame_pages``: cut a page, render it (CSV, JSON, markdown), the schema, tool views.
- ``frame_change``: ``fingerprint``, whether a frame changed since the last cell.
- ``frame_resources``: ``frame_components``, the resource and templates of one frame.

pandas is optional: nothing here imports pandas unless a frame was given.
"""

from __future__ import annotations

from .coercion import records
from .frame_change import FULL_HASH_CELLS, SAMPLE_HASH_ROWS, fingerprint
from .frame_pages import (
    FORMATS,
    MAX_CELL,
    MAX_ROWS,
    PAGE_META,
    PAGE_ROWS,
    ROWS_META,
    SAMPLE_ROWS,
    TOOL_ROWS,
    Rendered,
    Unframed,
    estimated_size,
    format_for,
    markdown_table,
    page,
    render,
    schema,
    tool_view,
    window,
)
from .frame_resources import frame_components
from .frames import is_frame, is_series

__all__ = [
    "FORMATS",
    "FULL_HASH_CELLS",
    "MAX_CELL",
    "MAX_ROWS",
    "PAGE_META",
    "PAGE_ROWS",
    "ROWS_META",
    "SAMPLE_HASH_ROWS",
    "SAMPLE_ROWS",
    "TOOL_ROWS",
    "Rendered",
    "Unframed",
    "estimated_size",
    "fingerprint",
    "format_for",
    "frame_components",
    "is_frame",
    "is_series",
    "markdown_table",
    "page",
    "records",
    "render",
    "schema",
    "tool_view",
    "window",
]
