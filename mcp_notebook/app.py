"""The ``mcp`` object a notebook works with: register components, start and stop serving."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

from . import discovery
from ._version import __version__
from .protocol import CallLog, InlineExecutor, LoopExecutor, Server
from .protocol.executor import Executor
from .registry import Kind, Prompt, Registry, Resource, ResourceTemplate, Tool, dataframes
from .transports.http import DEFAULT_MAX_BODY, HttpTransport
from .ui.confirmer import Confirmer, Policy, needs_confirmation, parse_policy

logger = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])
_MISSING: Any = object()
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
# Set by `mcp-notebook serve` in the kernel's environment: its options win over the cell's.
SERVE_OPTIONS_ENV = "MCP_NOTEBOOK_SERVE_OPTIONS"
DEFAULT_PORT = 8765


@dataclass(frozen=True)
class ServerInfo:
    url: str
    token: str | None
    name: str


class NotebookMCP:
    """Registers tools, resources and prompts, and serves them while the notebook runs."""

    def __init__(self, name: str | None = None, *, history: int = 1000) -> None:
        self.registry = Registry()
        self.calls = CallLog(maxlen=history)  # the last `history` calls: mcp.calls.maxlen
        self._name = name
        self.instructions: str | None = None
        # Which tools ask the person at the notebook before they run (ui/confirmer.py), and
        # how many seconds a question waits before the call is denied.
        self._confirm_policy: Policy = "marked"
        self.confirm_timeout: float = 120.0
        # Set by the kernel extension: the notebook UI (output capture, monitors, prompts).
        self.ui: Any = None
        # Filled in by the kernel extension: what a discovery file says about this server,
        # and the notebook's namespace for resources bound to variables.
        self.kernel_id: str | None = None
        self.notebook_path: str | None = None
        self.namespace: dict[str, Any] | None = None
        self.watched: dict[str, str] = {}  # variable -> URI of the resource that serves it
        self._transport: HttpTransport | None = None
        self._server: Server | None = None
        self._token: str | None = None
        self._discovery_file: Path | None = None
        self._lock = threading.Lock()
        self.registry.subscribe(self._announce)

    # -- tools -------------------------------------------------------------------------
    @overload
    def tool(self, fn: F, /) -> F: ...
    @overload
    def tool(self, fn: None = None, /, **options: Any) -> Callable[[F], F]: ...

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
    ) -> Any:
        """Register a function as a tool: ``@mcp.tool`` or ``@mcp.tool(name=..., ...)``."""

        def register(func: F) -> F:
            if not callable(func):
                raise TypeError(f"@mcp.tool needs a function, not {type(func).__name__}")
            tool_name = name or getattr(func, "__name__", None) or ""
            if not _TOOL_NAME.match(tool_name):
                raise ValueError(
                    f"Invalid tool name {tool_name!r}: use 1-128 letters, digits, '_', '-' or '.'"
                )
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
                )
            )
            return func

        return register(fn) if fn is not None else register

    # -- resources ---------------------------------------------------------------------
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
        options = {
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
            options["name"] = name or var
            reader = self._variable_reader(var)
            if format is not None or dataframes.is_frame((self.namespace or {}).get(var)):
                self.watched[var] = self._serve_frame(reader, None, **options)
                return None
            self.resource(reader, **options)
            self.watched[var] = self.registry.resources_by_name(options["name"])
            return None
        if obj is _MISSING:
            return lambda value: self.resource(value, **options)
        if dataframes.is_frame(obj):
            self._serve_frame(lambda: obj, obj, **options)
            return obj
        if format is not None:
            raise TypeError("format= is for DataFrames (a function's result: give mime_type=)")
        if callable(obj):
            reader = obj
            function_name = getattr(obj, "__name__", None)
            if not name and function_name and function_name.isidentifier():
                name = function_name  # not "<lambda>": that is no name to serve by
            if description is None and getattr(obj, "__doc__", None):
                description = obj.__doc__.strip().split("\n\n")[0]
        elif isinstance(obj, (str, bytes, bytearray)):
            reader = lambda: obj  # noqa: E731 - the value itself, read on each request
        else:
            raise TypeError(
                "mcp.resource() serves str, bytes, a DataFrame or a zero-argument callable, "
                f"not {type(obj).__name__}"
            )
        if not name and uri:
            name = uri
        if not name:
            raise ValueError("mcp.resource() needs name= (or uri=) for a value")
        if uri is None:
            uri = f"resource://{name}"
        if not _URI.match(uri):
            raise ValueError(f"Invalid resource URI {uri!r}: it needs a scheme, e.g. data://x")
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
        return obj

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
        if not name and uri:
            name = uri
        if not name:
            raise ValueError("mcp.resource() needs name= (or uri=) for a DataFrame")
        uri = uri or f"df://{name}"
        if not _URI.match(uri):
            raise ValueError(f"Invalid resource URI {uri!r}: it needs a scheme, e.g. data://x")
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
        if not _URI.match(uri_template):
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
        if not self.registry.remove(name):
            raise KeyError(f"nothing registered as {name!r}")

    # -- serving -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The server's name: given with ``--name``, else the notebook's file name."""
        if self._name:
            return self._name
        if self.notebook_path:
            return Path(self.notebook_path).stem
        return "mcp-notebook"

    @name.setter
    def name(self, value: str | None) -> None:
        self._name = value

    @property
    def running(self) -> bool:
        return self._transport is not None

    @property
    def url(self) -> str | None:
        return self._transport.url if self._transport else None

    @property
    def token(self) -> str | None:
        return self._token if self._transport else None

    def start(
        self,
        host: str = "127.0.0.1",
        port: int | None = None,
        *,
        token: str | None = None,
        auth: bool = True,
        name: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        executor: Executor | None = None,
    ) -> ServerInfo:
        """Serve over Streamable HTTP on a thread of its own; user code stays on this loop."""
        overrides = json.loads(os.environ.get(SERVE_OPTIONS_ENV) or "{}")
        host = overrides.get("host", host)
        port = overrides.get("port", port)
        token = overrides.get("token", token)
        auth = overrides.get("auth", auth)
        name = overrides.get("name", name)
        with self._lock:
            if self._transport is not None:
                self._stop_locked()
            if name:
                self.name = name
            if auth:
                # Keep the token across restarts so pasted client configs stay valid.
                self._token = token or self._token or secrets.token_urlsafe(24)
            else:
                self._token = None
            server = Server(
                self.registry,
                name=self.name,
                version=__version__,
                instructions=self.instructions,
                executor=executor or self._executor(),
                calls=self.calls,
            )
            server.confirm = Confirmer(self).confirm
            transport = self._bind(server, host, port, max_body)
            self._transport, self._server = transport, server
            if self.ui is not None:
                self.ui.attach(server)
            try:
                self._discovery_file = discovery.register(
                    self.name,
                    transport.url,
                    self._token,
                    kernel_id=self.kernel_id,
                    notebook=self.notebook_path,
                )
            except OSError as exc:
                logger.warning("could not write the discovery file: %s", exc)
        return ServerInfo(transport.url, self._token, self.name)

    def _bind(self, server: Server, host: str, port: int | None, max_body: int) -> HttpTransport:
        candidates = [port] if port is not None else [DEFAULT_PORT, 0]
        for index, candidate in enumerate(candidates):
            transport = HttpTransport(
                server, host=host, port=candidate, token=self._token, max_body=max_body
            )
            try:
                transport.start()
                return transport
            except OSError:
                if index == len(candidates) - 1:
                    raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        transport, self._transport, self._server = self._transport, None, None
        discovery.unregister(self._discovery_file)
        self._discovery_file = None
        if transport is not None:
            transport.stop()

    def status(self) -> dict[str, Any]:
        transport = self._transport
        return {
            "running": transport is not None,
            "url": transport.url if transport else None,
            "auth": bool(self._token) if transport else None,
            "sessions": len(transport.sessions) if transport else 0,
            "tools": list(self.registry.tools),
            "resources": [r.uri for r in self.registry.resources.values()],
            "resource_templates": list(self.registry.templates),
            "prompts": list(self.registry.prompts),
        }

    # -- the notebook UI: confirmations and the monitor --------------------------------
    @property
    def confirm_policy(self) -> Policy:
        """Which tools ask first: "marked" (confirm=True ones), "all", "none", "destructive"
        (destructiveHint true, and marked ones) or a tuple of tool names (and marked ones)."""
        return self._confirm_policy

    @confirm_policy.setter
    def confirm_policy(self, value: str | tuple[str, ...] | list[str]) -> None:
        self._confirm_policy = parse_policy(value)

    def needs_confirmation(self, tool: Tool | str) -> bool:
        if isinstance(tool, str):
            tool = self.registry.tools[tool]
        return needs_confirmation(self._confirm_policy, tool)

    def monitor(self) -> Any:
        """A live monitor widget of calls and confirmations; show as many as you like."""
        if self.ui is None:
            raise RuntimeError("the monitor needs the notebook: %load_ext mcp_notebook")
        return self.ui.monitor()

    def _executor(self) -> Executor:
        # In a kernel, each call runs in its own context and its output goes to its record.
        return self.ui.executor() if self.ui is not None else _current_executor()

    def resource_updated(self, name_or_uri: str) -> None:
        """Tell subscribed clients that a resource's content changed."""
        for uri, resource in self.registry.resources.items():
            if name_or_uri in (uri, resource.name):
                self.registry.resource_updated(uri)
                return
        self.registry.resource_updated(name_or_uri)  # e.g. a URI served by a template

    def _announce(self, kind: Kind, detail: str | None) -> None:
        transport, server = self._transport, self._server
        if transport is None or server is None:
            return
        if kind == "updated":
            transport.call_soon(server.resource_updated, detail)
        else:
            transport.call_soon(server.list_changed, kind)

    def __repr__(self) -> str:
        state = f"serving {self.url}" if self.running else "not serving"
        counts = (
            f"{len(self.registry.tools)} tools, {len(self.registry.resources)} resources, "
            f"{len(self.registry.templates)} templates, {len(self.registry.prompts)} prompts"
        )
        return f"<mcp {self.name!r}: {counts}; {state}>"


def _current_executor() -> Executor:
    """The running loop of the calling thread (the kernel's) if there is one."""
    try:
        return LoopExecutor(asyncio.get_running_loop())
    except RuntimeError:
        return InlineExecutor()


mcp = NotebookMCP()
