"""The resource and templates that serve one registered frame (see ``dataframes``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..wire import jsontext
from .components import Resource, ResourceTemplate
from .frame_pages import (
    FORMATS,
    MAX_ROWS,
    PAGE_ROWS,
    Rendered,
    Unframed,
    estimated_size,
    format_for,
    page,
    schema,
    template_uri,
)
from .frames import is_frame, is_series


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
) -> tuple[Resource, ResourceTemplate, ResourceTemplate]:
    """The resource, page template and schema template of a frame ``reader()`` returns.

    ``current`` is the frame as registered (None for a live variable): it gives the size
    estimate and the row count in the description.
    """
    readers = _FrameReaders(reader, name, uri, fmt)
    if size is None and current is not None:
        size = estimated_size(current, fmt)
    return (
        Resource(
            uri,
            name,
            readers.read,
            title=title,
            description=_description(description, fmt, current, uri),
            mime_type=FORMATS[fmt],
            size=size,
            annotations=annotations,
            meta=meta,
        ),
        ResourceTemplate(
            template_uri(uri),
            name,
            readers.page_reader(),
            title=title,
            description=(
                f"Rows of {name}: offset (from 0), limit (1-{MAX_ROWS}, default {PAGE_ROWS}), "
                f"columns (comma-separated names), format ({', '.join(FORMATS)})"
            ),
            mime_type=FORMATS[fmt],
            annotations=annotations,
            completers={"format": list(FORMATS), "columns": readers.complete_columns},
        ),
        # A template without variables (RFC 6570 allows it) rather than a second resource:
        # it shares the frame's name, so removing or re-registering the frame takes it
        # along, and resources/list keeps one entry per registered frame.
        ResourceTemplate(
            uri + "/schema",
            name,
            readers.read_schema,
            title=f"{title or name}: schema",
            description=f"Columns, dtypes, null counts, row count and sample rows of {name}",
            mime_type="application/json",
        ),
    )


def _description(given: str | None, fmt: str, current: Any, uri: str) -> str:
    description = given
    if description is None:
        description = f"A DataFrame as {fmt}"
        if current is not None:
            description += f" ({len(current)} rows, {current.shape[1]} columns)"
    if current is None or len(current) > PAGE_ROWS:
        # The agent must know that a plain read is not the whole frame.
        description = description.rstrip(". ") + (
            f". A read returns at most the first {PAGE_ROWS} rows; read other rows with "
            f"{template_uri(uri)} and the columns and dtypes at {uri}/schema."
        )
    return description


def _split_columns(columns: str) -> list[str] | None:
    return [c.strip() for c in columns.split(",") if c.strip()] or None


class _FrameReaders:
    """The read functions of one frame's resource and templates."""

    def __init__(self, reader: Callable[[], Any], name: str, uri: str, fmt: str) -> None:
        self.reader, self.name, self.uri, self.fmt = reader, name, uri, fmt

    def frame(self) -> Any:
        value = self.reader()
        if not (is_frame(value) or is_series(value)):
            raise TypeError(f"{self.name} holds a {type(value).__name__}, not a DataFrame")
        return value.to_frame() if is_series(value) else value

    def read(self) -> Rendered | Unframed:
        value = self.reader()
        if is_frame(value) or is_series(value):
            return page(self.frame(), fmt=self.fmt, base_uri=self.uri)
        return Unframed(value)  # a live variable that holds something else now

    def page_reader(self) -> Callable[..., Rendered]:
        # A function, not a method: the template's variables and their defaults come from
        # its signature, and ``format`` defaults to this frame's own format.
        def read_page(
            offset: int = 0, limit: int = PAGE_ROWS, columns: str = "", format: str = self.fmt
        ) -> Rendered:
            return page(
                self.frame(),
                offset=offset,
                limit=limit,
                columns=_split_columns(columns),
                fmt=format_for(format or self.fmt),
                base_uri=self.uri,
            )

        return read_page

    def read_schema(self) -> Rendered:
        text = jsontext.dumps_text(schema(self.frame(), self.uri))
        return Rendered(text, "application/json")

    def complete_columns(self, prefix: str) -> list[str]:
        done, _, typed = prefix.rpartition(",")
        lead = done + "," if done else ""
        return [lead + str(c) for c in self.frame().columns if str(c).startswith(typed)]
