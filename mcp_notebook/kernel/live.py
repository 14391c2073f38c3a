"""Resources bound to notebook variables: after each cell, tell subscribers what changed.

Change detection must stay cheap on every cell, so it compares identity and a shallow
fingerprint (length, shape), never the content of a possibly huge object.
"""

from __future__ import annotations

from typing import Any

from ..app import NotebookMCP

_MISSING = object()


def fingerprint(value: Any) -> tuple[Any, ...]:
    shape = getattr(value, "shape", None)
    try:
        length = len(value)
    except Exception:
        length = None
    return (id(value), length, shape if isinstance(shape, tuple) else None)


class VariableWatcher:
    def __init__(self, app: NotebookMCP, namespace: dict[str, Any]) -> None:
        self.app, self.namespace = app, namespace
        self._seen: dict[str, tuple[Any, ...]] = {}

    def __call__(self, *_: Any) -> None:
        """IPython's post_run_cell hook."""
        for var, uri in list(self.app.watched.items()):
            if uri not in self.app.registry.resources:
                del self.app.watched[var]  # the resource was removed or replaced
                self._seen.pop(var, None)
                continue
            value = self.namespace.get(var, _MISSING)
            now = fingerprint(value) if value is not _MISSING else ("missing",)
            before = self._seen.get(var)
            self._seen[var] = now
            if before is not None and before != now:
                self.app.registry.resource_updated(uri)
