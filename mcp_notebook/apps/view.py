"""A registered app view: what it shows, its ``ui://`` resource, and its per-call rendering.

``source`` is something a notebook can display (shown as it is whenever the resource is
read, so a DataFrame changed in place shows its new rows) or a function of the tool's
result returning one (``per_call``): each call's result then carries its own rendering in
the result's ``_meta`` (the document swaps it in, from the host's tool-result), and a read
of the resource by the session that made a call shows its latest one; any other reader
(another session, a 2026-07-28 request: see ``registry.views.VIEWER``) gets the view's
default, the waiting page. Values are escaped however a view shows them (.escaping).

``_meta.ui.csp`` is the author's: the origins given with ``csp=``, and for a fixed view
those its markup loads from when it is registered; never what a call's data holds.
All rendering runs where user code runs: on the kernel thread.
"""

from __future__ import annotations

import contextlib
import functools
import html
import inspect
import threading
from collections import OrderedDict
from typing import Any

from .._version import __version__
from ..registry import Resource, dataframes
from ..registry.frame_pages import Rendered
from ..registry.views import MIME_TYPE, RESULT_VIEW_KEY, VIEWER, Csp, resource_meta
from .csp import scan
from .document import document
from .escaping import escaping
from .render import Fragment, fragment

_NOTHING_YET = object()
URI_PREFIX = "ui://notebook/"
# Sessions whose latest call a per-call view keeps for their reads, at most (the oldest
# is forgotten first): a client opening sessions in a loop cannot grow it.
MAX_VIEWERS = 64


def is_view_function(source: Any) -> bool:
    """A function (or method, partial...) to call per result, not a value to display."""
    return inspect.isroutine(source) or isinstance(source, functools.partial)


class AppView:
    def __init__(
        self,
        source: Any,
        name: str,
        *,
        per_call: bool | None = None,
        uri: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: dict[str, Any] | None = None,
        prefers_border: bool | None = None,
    ) -> None:
        self.source = source
        self.name = name
        self.per_call = is_view_function(source) if per_call is None else per_call
        self.uri = uri or URI_PREFIX + name
        if not self.uri.startswith("ui://"):
            raise ValueError(f"an app view's URI starts with ui://, not {self.uri!r}")
        self.title = title or name
        self.description = description or f"The app view of {name}."
        self.declared = Csp.from_wire(csp)
        self.prefers_border = prefers_border
        self.widget_tool: str | None = None  # set when the view holds widgets
        self.static: Csp | None = None  # the CSP, once known (resource(), or the first read)
        self._latest: OrderedDict[str, Any] = OrderedDict()  # by viewer (VIEWER)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        kind = "per call" if self.per_call else type(self.source).__name__
        return f"<AppView {self.uri} ({kind})>"

    # -- what is shown -----------------------------------------------------------------
    def shown(self, result: Any = _NOTHING_YET) -> Any:
        """The displayable for ``result`` (a per-call view), or the view's own value; for
        a per-call view without one, the latest result of the caller (VIEWER)."""
        if not self.per_call:
            return self.source
        if result is _NOTHING_YET:
            viewer = VIEWER.get()
            with self._lock:
                result = self._latest.get(viewer, _NOTHING_YET) if viewer else _NOTHING_YET
            if result is _NOTHING_YET:
                return _Waiting(self.title)
        return self.source(result) if callable(self.source) else result

    def fragment(self, result: Any = _NOTHING_YET) -> Fragment:
        with escaping():  # a Styler a view function renders itself included
            shown = self.shown(result)
        with escaping():  # set up again: that function may have been pandas' first import
            return fragment(shown)

    def csp(self, body: Fragment | None = None) -> Csp:
        """The author's origins: csp=, and a fixed view's markup when first drawn (here,
        given its ``body``); a per-call view's markup shows a call's data: never scanned."""
        if self.static is None:
            if self.per_call:
                self.static = self.declared
            elif body is not None:
                self.static = scan(body.html).merged(self.declared)
        return self.static if self.static is not None else self.declared

    def read(self) -> Rendered:
        """The ``resources/read`` contents: the whole document and its ``_meta.ui``."""
        body = self.fragment()
        config = {"view": self.uri, "version": __version__, "setTool": self.widget_tool}
        text = document(body, title=self.title, config=config)
        return Rendered(text, MIME_TYPE, resource_meta(self.csp(body), self.prefers_border))

    def resource(self) -> Resource:
        # The listing and every read declare the same origins: the author's, known now
        # (a fixed view is drawn once here; if it cannot be yet, at its first read).
        if not self.per_call:
            with contextlib.suppress(Exception):  # its reads will say why
                self.csp(self.fragment())
        return Resource(
            self.uri,
            f"{self.name} (view)",
            self.read,
            title=self.title,
            description=self.description,
            mime_type=MIME_TYPE,
            meta=resource_meta(self.csp(), self.prefers_border),
        )

    def summary(self) -> Any:
        """What the tool of a fixed view returns: the value itself (a DataFrame's table,
        a figure's image, for the model and text-only hosts), or for widgets a text."""
        if self.widget_tool is not None:
            from .widgets import describe

            return f"{self.title}: an interactive view ({self.uri}).\n" + describe(self.source)
        if dataframes.is_frame(self.source) or isinstance(self.source, str):
            return self.source  # its table (or text) says it all
        return [f"{self.title}: shown in the app view {self.uri}.", self.source]

    def companion_tools(self) -> list[Any]:
        """Tools the view itself calls: ``<name>.set`` for a widget tree."""
        from .render import _is_widget

        if self.per_call or not _is_widget(self.source):
            return []
        from .widgets import set_tool

        tool = set_tool(self)
        self.widget_tool = tool.name
        return [tool]

    # -- per call ----------------------------------------------------------------------
    def result_meta(self, result: Any) -> dict[str, Any] | None:
        """What a tool call's result carries for the view: its own rendering (per-call
        views), or None (the document already shows the view)."""
        if not self.per_call:
            return None
        viewer = VIEWER.get()
        if viewer is not None:  # the caller's reads of the view show this call
            with self._lock:
                self._latest[viewer] = result
                self._latest.move_to_end(viewer)
                while len(self._latest) > MAX_VIEWERS:
                    self._latest.popitem(last=False)
        body = self.fragment(result)
        return {RESULT_VIEW_KEY: {"html": body.html, "widgets": body.widgets}}


class _Waiting:
    """What a per-call view shows before its tool was first called."""

    def __init__(self, title: str) -> None:
        self.title = title

    def _repr_html_(self) -> str:
        return (
            f'<p class="mcp-notebook-waiting">{html.escape(self.title)}: waiting for a result.</p>'
        )
