"""What a tool's app view is, on the wire: MCP Apps (``io.modelcontextprotocol/ui``).

A view is a ``ui://`` resource of mime type ``text/html;profile=mcp-app``; a tool names it
in ``_meta.ui.resourceUri`` and says who may call it in ``_meta.ui.visibility``. The
resource's own ``_meta.ui.csp`` lists the origins its HTML loads from (none when it is
self-contained). Rendering a view into HTML is the business of :mod:`mcp_notebook.apps`;
this module only knows the metadata, and what a client that did not declare the
extension gets instead (the spec's text-only fallback): no ``_meta.ui`` on tools, no
app-only tools, no ``ui://`` resources in lists.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

EXTENSION = "io.modelcontextprotocol/ui"
MIME_TYPE = "text/html;profile=mcp-app"
SCHEME = "ui://"
VISIBILITIES = ("model", "app")
# A tool call's result carries its own rendering of a per-call view under this key of the
# result's ``_meta`` (the view document swaps it in; ``_meta`` stays out of model context).
RESULT_VIEW_KEY = "mcp-notebook/view"
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
# Who the per-call rendering of a view is for while a tools/call or a resources/read of a
# view runs (set by the protocol, read by apps/view.py): a handshake session's id. None
# for a 2026-07-28 request (stateless: nothing says two requests come from one caller;
# its call's rendering travels in the call's result alone) and outside a request.
VIEWER: contextvars.ContextVar[str | None] = contextvars.ContextVar("viewer", default=None)


def viewer_of(session: Any) -> str | None:
    """The key a session's per-call renderings are kept under (see VIEWER)."""
    return session.id if getattr(session, "era", None) == "handshake" else None


def for_viewer(viewer: str | None, work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` with VIEWER set to ``viewer`` (on the thread that runs it)."""
    token = VIEWER.set(viewer)
    try:
        return work(*args)
    finally:
        VIEWER.reset(token)


def check_visibility(visibility: Iterable[str] | None) -> tuple[str, ...] | None:
    """The visibility as given, checked: a non-empty list of "model" and/or "app"."""
    if visibility is None:
        return None
    if isinstance(visibility, str):
        raise TypeError('visibility= is a list, e.g. ["app"]')
    values = tuple(dict.fromkeys(visibility))
    if not values or any(v not in VISIBILITIES for v in values):
        raise ValueError(f'visibility= must list "model" and/or "app", not {list(visibility)!r}')
    return values


def tool_meta(
    meta: dict[str, Any] | None, resource_uri: str | None, visibility: tuple[str, ...] | None
) -> dict[str, Any] | None:
    """The tool's ``_meta`` with its ``ui`` entry (McpUiToolMeta) merged in."""
    ui: dict[str, Any] = {}
    if resource_uri is not None:
        ui["resourceUri"] = resource_uri
    if visibility is not None:
        ui["visibility"] = list(visibility)
    if not ui:
        return meta
    given = dict(meta or {})
    given["ui"] = {**(given.get("ui") or {}), **ui}
    return given


def app_only(definition: Mapping[str, Any]) -> bool:
    """Whether a tool is for app views alone (its visibility leaves out "model")."""
    ui = (definition.get("_meta") or {}).get("ui") or {}
    visibility = ui.get("visibility")
    return isinstance(visibility, list) and "model" not in visibility


def call_origin(app_only_view: str | None, params: Mapping[str, Any]) -> str | None:
    """The view a ``tools/call`` came from: the one an app-only tool belongs to (only a
    view calls it), or the one the view says in ``_meta`` (our documents say it; a
    host may forward it or not)."""
    meta = params.get("_meta")
    said = meta.get(RESULT_VIEW_KEY) if isinstance(meta, dict) else None
    origin = said.get("from") if isinstance(said, dict) else None
    if isinstance(origin, str) and origin.startswith(SCHEME) and len(origin) <= 512:
        return origin
    return app_only_view


def supports_ui(capabilities: Mapping[str, Any] | None) -> bool:
    """Whether a client declared the extension with the MCP App mime type (both eras put
    it in ``capabilities.extensions``)."""
    extensions = (capabilities or {}).get("extensions")
    settings = extensions.get(EXTENSION) if isinstance(extensions, dict) else None
    if not isinstance(settings, dict):
        return False
    mime_types = settings.get("mimeTypes")
    return isinstance(mime_types, list) and MIME_TYPE in mime_types


def tools_for(definitions: Iterable[dict[str, Any]], ui: bool) -> list[dict[str, Any]]:
    """Tool definitions as a client sees them: whole for a UI host; else without the UI
    metadata it cannot use, and without the tools only an app view may call."""
    items = list(definitions)
    if ui:
        return items
    return [_without_ui(d) for d in items if not app_only(d)]


def resources_for(definitions: Iterable[dict[str, Any]], ui: bool) -> list[dict[str, Any]]:
    """Resource definitions as a client sees them: ``ui://`` views only for UI hosts (the
    spec lets a server leave them out of lists; reading one still works)."""
    items = list(definitions)
    if ui:
        return items
    return [d for d in items if not str(d.get("uri", "")).startswith(SCHEME)]


def _without_ui(definition: dict[str, Any]) -> dict[str, Any]:
    meta = definition.get("_meta")
    if not isinstance(meta, dict) or ("ui" not in meta and "ui/resourceUri" not in meta):
        return definition
    rest = {k: v for k, v in meta.items() if k not in ("ui", "ui/resourceUri")}
    stripped = {k: v for k, v in definition.items() if k != "_meta"}
    if rest:
        stripped["_meta"] = rest
    return stripped


@dataclass(frozen=True)
class Csp:
    """The origins a view's document loads from, by CSP directive (McpUiResourceCsp)."""

    connect: tuple[str, ...] = ()
    resource: tuple[str, ...] = ()
    frame: tuple[str, ...] = ()
    base_uri: tuple[str, ...] = ()

    def merged(self, other: Csp) -> Csp:
        def union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(dict.fromkeys((*a, *b)))

        return Csp(
            union(self.connect, other.connect),
            union(self.resource, other.resource),
            union(self.frame, other.frame),
            union(self.base_uri, other.base_uri),
        )

    def wire(self) -> dict[str, list[str]]:
        """Only the directives that name an origin: an omitted one is the secure default."""
        values = (self.connect, self.resource, self.frame, self.base_uri)
        return {key: sorted(v) for key, v in zip(CSP_KEYS, values, strict=True) if v}

    @classmethod
    def from_wire(cls, given: Mapping[str, Any] | None) -> Csp:
        given = given or {}
        unknown = set(given) - set(CSP_KEYS)
        if unknown:
            raise ValueError(f"csp= takes {', '.join(CSP_KEYS)}, not {', '.join(sorted(unknown))}")
        lists = []
        for key in CSP_KEYS:
            value = given.get(key) or []
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise TypeError(f"csp[{key!r}] is a list of origins")
            lists.append(tuple(value))
        return cls(*lists)


def resource_meta(csp: Csp, prefers_border: bool | None = None) -> dict[str, Any] | None:
    """A view resource's ``_meta`` (McpUiResourceMeta under ``ui``); None when it has
    nothing to say (no origins: the host's restrictive default CSP applies)."""
    ui: dict[str, Any] = {}
    wire = csp.wire()
    if wire:
        ui["csp"] = wire
    if prefers_border is not None:
        ui["prefersBorder"] = prefers_border
    return {"ui": ui} if ui else None
