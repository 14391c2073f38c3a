"""Registering tools, resources, templates and prompts from cells: the ``mcp`` object's API.

A base of :class:`~mcp_notebook.base.BaseMCP`; everything here only changes the
Registry, which announces each change to whoever serves it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar, overload

from .registry import Prompt, ResourceTemplate, Tool
from .resource_registration import URI, ResourceRegistrations

F = TypeVar("F", bound=Callable[..., Any])
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_SCOPE = re.compile(r"^[\x21\x23-\x5B\x5D-\x7E]{1,256}$")


def tool_scopes(scopes: Any) -> frozenset[str]:
    """``scopes=`` checked at registration: OAuth scope tokens (RFC 6749 §3.3)."""
    if scopes is None:
        return frozenset()
    if isinstance(scopes, str) or not all(isinstance(s, str) for s in scopes):
        raise TypeError("scopes= takes a list of scope names, e.g. scopes=['files:write']")
    for scope in scopes:
        if not _SCOPE.match(scope):
            raise ValueError(
                f"Invalid scope {scope!r}: printable ASCII without spaces, quotes or \\"
            )
    return frozenset(scopes)


class Registrations(ResourceRegistrations):
    """``@mcp.tool``, ``mcp.app``, ``@mcp.resource_template``, ``mcp.prompt``; ``mcp.resource``
    comes from :class:`ResourceRegistrations`."""

    # -- tools -------------------------------------------------------------------------
    @overload
    def tool(self, fn: F, /) -> F: ...
    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, Any] | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        confirm: bool = False,
        meta: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        task: str = "optional",
        app: Any = None,
        visibility: list[str] | None = None,
        scopes: list[str] | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, Any] | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        confirm: bool = False,
        meta: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        task: str = "optional",
        app: Any = None,
        visibility: list[str] | None = None,
        scopes: list[str] | None = None,
    ) -> Any:
        """Register a function as a tool: ``@mcp.tool`` or ``@mcp.tool(name=..., ...)``.

        ``app=`` gives it an MCP Apps view: anything the notebook can display, a function
        of the tool's result returning one, a view from ``mcp.app``, or a ``ui://`` URI.
        ``visibility=["app"]`` makes it a tool only app views call (hosts hide it from
        the model). ``scopes=["files:write"]``: with OAuth on, a caller's token needs these
        scopes too (403 ``insufficient_scope`` otherwise); without OAuth they change nothing.
        """
        needed = tool_scopes(scopes)

        def register(func: F) -> F:
            if not callable(func):
                raise TypeError(f"@mcp.tool needs a function, not {type(func).__name__}")
            tool_name = name or getattr(func, "__name__", None) or ""
            if not _TOOL_NAME.match(tool_name):
                raise ValueError(
                    f"Invalid tool name {tool_name!r}: use 1-128 letters, digits, '_', '-' or '.'"
                )
            view = self._app_view(app, tool_name, title) if app is not None else None
            self.registry.add_tool(
                Tool(
                    func,
                    tool_name,
                    title=title,
                    description=description,
                    annotations=annotations,
                    input_schema=input_schema,
                    output_schema=output_schema,
                    confirm=confirm,
                    meta=meta,
                    icons=icons,
                    task=task,
                    view_uri=view if isinstance(view, str) else view.uri if view else None,
                    visibility=visibility,
                    view_meta=None if view is None or isinstance(view, str) else view.result_meta,
                    scopes=needed,
                )
            )
            return func

        return register(fn) if fn is not None else register

    # -- MCP Apps views ----------------------------------------------------------------
    def app(
        self,
        name: str,
        view: Any,
        /,
        *,
        title: str | None = None,
        description: str | None = None,
        csp: dict[str, Any] | None = None,
        prefers_border: bool | None = None,
        annotations: dict[str, Any] | None = None,
        confirm: bool = False,
        visibility: list[str] | None = None,
    ) -> Any:
        """A tool ``name`` whose result is shown as an MCP App view.

        ``view`` is anything the notebook can display (a DataFrame or Styler, a figure,
        an ``IPython.display`` object, an ipywidgets tree), served as it is when a host
        reads it; or a function whose parameters are the tool's arguments and which
        returns one per call. ``csp=`` adds origins the view's scripts reach that its
        markup does not show (e.g. ``{"connectDomains": ["https://api.example.com"]}``).
        Returns the view, to give other tools as ``app=``.
        """
        from .apps import AppView, is_view_function

        if not _TOOL_NAME.match(name):
            raise ValueError(
                f"Invalid tool name {name!r}: use 1-128 letters, digits, '_', '-' or '.'"
            )
        per_call = is_view_function(view)
        app_view = AppView(
            None if per_call else view,
            name,
            per_call=per_call,
            title=title,
            description=description,
            csp=csp,
            prefers_border=prefers_border,
        )
        self._serve_view(app_view)
        if per_call:
            fn = view
        else:

            def fn() -> Any:
                return app_view.summary()

            fn.__name__ = name
            fn.__doc__ = description or f"Show {title or name} as an interactive view."
        self.registry.add_tool(
            Tool(
                fn,
                name,
                title=title,
                description=description,
                annotations=annotations,
                confirm=confirm,
                view_uri=app_view.uri,
                visibility=visibility,
                view_meta=app_view.result_meta,
            ),
            quiet_if_same=True,
        )
        return app_view

    def _app_view(self, app: Any, tool_name: str, title: str | None) -> Any:
        """The view a tool's ``app=`` names: a ``ui://`` URI, a view, or a new view."""
        from .apps import AppView

        if isinstance(app, str) and app.startswith("ui://"):
            return app
        if isinstance(app, AppView):
            return app
        view = AppView(app, tool_name, title=title)
        self._serve_view(view)
        return view

    def _serve_view(self, view: Any) -> None:
        # A view's cell run again with the same definitions changes no listing: hosts hear
        # resources/updated (its content is drawn anew), not list_changed.
        self.registry.add_resource(view.resource(), quiet_if_same=True)
        for tool in view.companion_tools():  # e.g. the widgets' `<name>.set`
            self.registry.add_tool(tool, quiet_if_same=True)

    def resource_template(
        self,
        uri_template: str,
        *,
        name: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, Any] | None = None,
        complete: dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """``@mcp.resource_template("notes://{day}")``: the function receives the URI's values.

        ``complete={"day": ["mon", "tue"]}`` (or a function of the typed prefix) feeds
        ``completion/complete`` for a template variable.
        """
        if not URI.match(uri_template):
            raise ValueError(f"Invalid URI template {uri_template!r}: it needs a scheme")

        def register(fn: F) -> F:
            self.registry.add_template(
                ResourceTemplate(
                    uri_template,
                    name or fn.__name__,
                    fn,
                    title=title,
                    description=description,
                    mime_type=mime_type,
                    annotations=annotations,
                    completers=dict(complete or {}),
                )
            )
            return fn

        return register

    # -- prompts -----------------------------------------------------------------------
    def prompt(
        self,
        name_or_fn: Any = None,
        template: str | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        defaults: dict[str, str] | None = None,
        role: str = "user",
        complete: dict[str, Any] | None = None,
    ) -> Any:
        """``mcp.prompt("name", "text with {arg}")``, or ``@mcp.prompt`` on a function.

        ``complete={"arg": [...] or fn(prefix)}`` feeds ``completion/complete``.
        """
        if callable(name_or_fn):
            prompt = Prompt.from_function(
                name_or_fn, name=name, title=title, description=description
            )
            prompt.completers = dict(complete or {})
            self.registry.add_prompt(prompt)
            return name_or_fn
        if isinstance(name_or_fn, str) and template is not None:
            prompt = Prompt.from_template(
                name_or_fn,
                template,
                title=title,
                description=description,
                defaults=defaults,
                role=role,
            )
            prompt.completers = dict(complete or {})
            self.registry.add_prompt(prompt)
            return None
        if name_or_fn is not None and not isinstance(name_or_fn, str):
            raise TypeError("mcp.prompt() takes a name and a template, or decorates a function")
        decorator_name = name_or_fn or name
        return lambda fn: self.prompt(
            fn, name=decorator_name, title=title, description=description, complete=complete
        )

    def remove(self, name: str) -> None:
        """Remove the tool, prompt or resource (by name or URI) called ``name``."""
        tool = self.registry.tools.get(name)
        if not self.registry.remove(name):
            raise KeyError(f"nothing registered as {name!r}")
        view_uri = getattr(tool, "view_uri", None)
        if view_uri == f"ui://notebook/{name}":
            self.registry.remove(view_uri)  # the view made for it goes with it
            self.registry.remove(f"{name}.set")  # and its widgets' tool, if any

    def resource_updated(self, name_or_uri: str) -> None:
        """Tell subscribed clients that a resource's content changed."""
        for uri, resource in self.registry.resources.items():
            if name_or_uri in (uri, resource.name):
                self.registry.resource_updated(uri)
                return
        self.registry.resource_updated(name_or_uri)  # e.g. a URI served by a template
