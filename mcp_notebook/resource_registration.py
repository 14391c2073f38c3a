"""Serving values as resources from cells: ``mcp.resource(...)`` and what it builds on.

A mixin of :class:`~mcp_notebook.registration.Registrations`: a str, bytes, DataFrame,
zero-argument callable or notebook variable becomes a Resource (a frame also its page and
schema templates) in the Registry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .registry import Registry, Resource, dataframes

_MISSING: Any = object()
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


class ResourceRegistrations:
    """``mcp.resource``: a value, a function or a notebook variable, served by URI."""

    if TYPE_CHECKING:
        registry: Registry
        namespace: dict[str, Any] | None
        watched: dict[str, str]

    def resource(
        self,
        obj: Any = _MISSING,
        /,
        *,
        name: str | None = None,
        uri: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, Any] | None = None,
        size: int | None = None,
        meta: dict[str, Any] | None = None,
        var: str | None = None,
        format: str | None = None,
    ) -> Any:
        """Serve a str, bytes, DataFrame or zero-argument callable as a resource.

        ``mcp.resource(df, name="sales")`` or, on a function, ``@mcp.resource`` /
        ``@mcp.resource(uri="notes://today")``. ``mcp.resource(var="notes")`` serves
        whatever the notebook variable holds when it is read; subscribers hear when a cell
        re-binds or changes it. Returns ``obj`` unchanged.

        A DataFrame (or a variable holding one) is served at ``df://NAME`` -- its first
        rows, as ``format`` "csv" (default), "json" or "markdown" -- with a page template
        ``df://NAME{?offset,limit,columns,format}`` and ``df://NAME/schema``.
        """
        options: dict[str, Any] = {
            "name": name,
            "uri": uri,
            "mime_type": mime_type,
            "title": title,
            "description": description,
            "annotations": annotations,
            "size": size,
            "meta": meta,
            "format": format,
        }
        if var is not None:
            if obj is not _MISSING:
                raise TypeError("mcp.resource() takes a value or var=, not both")
            self._serve_variable(var, options)
            return None
        if obj is _MISSING:
            return lambda value: self.resource(value, **options)
        if dataframes.is_frame(obj):
            self._serve_frame(lambda: obj, obj, **options)
            return obj
        self._serve_value(obj, **options)
        return obj

    def _serve_variable(self, var: str, options: dict[str, Any]) -> None:
        """Serve what ``var`` holds when read; remember the URI that serves it."""
        options["name"] = options["name"] or var
        reader = self._variable_reader(var)
        namespace = self.namespace or {}
        if options["format"] is not None or dataframes.is_frame(namespace.get(var)):
            self.watched[var] = self._serve_frame(reader, None, **options)
            return
        self.resource(reader, **options)
        self.watched[var] = self.registry.resources_by_name(options["name"])

    def _serve_value(
        self,
        obj: Any,
        *,
        name: str | None,
        uri: str | None,
        mime_type: str | None,
        title: str | None,
        description: str | None,
        annotations: dict[str, Any] | None,
        size: int | None,
        meta: dict[str, Any] | None,
        format: str | None,
    ) -> None:
        """Register a str, bytes or zero-argument callable (not a frame) as a resource."""
        if format is not None:
            raise TypeError("format= is for DataFrames (a function's result: give mime_type=)")
        if callable(obj):
            reader = obj
            name, description = _named_by_function(obj, name, description)
        elif isinstance(obj, (str, bytes, bytearray)):
            reader = lambda: obj  # noqa: E731 - the value itself, read on each request
        else:
            raise TypeError(
                "mcp.resource() serves str, bytes, a DataFrame or a zero-argument callable, "
                f"not {type(obj).__name__}"
            )
        name, uri = _name_and_uri(name, uri, "resource", "a value")
        if size is None and isinstance(obj, str):
            size = len(obj.encode())
        elif size is None and isinstance(obj, (bytes, bytearray)):
            size = len(obj)
        if mime_type is None and isinstance(obj, str):
            mime_type = "text/plain"
        self.registry.add_resource(
            Resource(
                uri,
                name,
                reader,
                title=title,
                description=description,
                mime_type=mime_type,
                size=size,
                annotations=annotations,
                meta=meta,
            )
        )

    def _serve_frame(
        self,
        reader: Callable[[], Any],
        current: Any,
        *,
        name: str | None,
        uri: str | None,
        mime_type: str | None,
        format: str | None,
        **options: Any,
    ) -> str:
        """Register a frame's resource, page and schema templates; return the resource URI."""
        # An empty uri= means the default here (a value's resource refuses it).
        name, uri = _name_and_uri(name, uri or None, "df", "a DataFrame")
        fmt = dataframes.format_for(format, mime_type)
        resource, *templates = dataframes.frame_components(
            reader, name=name, uri=uri, fmt=fmt, current=current, **options
        )
        # The same name served at another URI before: drop its old templates too.
        keep = {t.uri_template for t in templates}
        for key, old in list(self.registry.templates.items()):
            if old.name == name and key not in keep:
                self.registry.remove(key)
        self.registry.add_resource(resource)
        for template in templates:
            self.registry.add_template(template)
        return uri

    def _variable_reader(self, var: str) -> Callable[[], Any]:
        def read() -> Any:
            namespace = self.namespace if self.namespace is not None else {}
            if var not in namespace:
                raise LookupError(f"the notebook has no variable {var!r} (yet)")
            return namespace[var]

        read.__name__ = var
        return read


def _named_by_function(
    fn: Callable[..., Any], name: str | None, description: str | None
) -> tuple[str | None, str | None]:
    """A function's resource is named and described by the function unless told otherwise."""
    function_name = getattr(fn, "__name__", None)
    if not name and function_name and function_name.isidentifier():
        name = function_name  # not "<lambda>": that is no name to serve by
    doc = getattr(fn, "__doc__", None)
    if description is None and doc:
        description = doc.strip().split("\n\n")[0]
    return name, description


def _name_and_uri(name: str | None, uri: str | None, scheme: str, what: str) -> tuple[str, str]:
    """The name (else the URI) and the URI (else ``scheme://name``) a resource is served by."""
    if not name and uri:
        name = uri
    if not name:
        raise ValueError(f"mcp.resource() needs name= (or uri=) for {what}")
    if uri is None:
        uri = f"{scheme}://{name}"
    if not URI.match(uri):
        raise ValueError(f"Invalid resource URI {uri!r}: it needs a scheme, e.g. data://x")
    return name, uri
