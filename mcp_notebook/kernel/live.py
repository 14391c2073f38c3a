"""Resources bound to notebook variables: after each cell, tell subscribers what changed.

This runs after every cell, so change detection must stay cheap whatever the variable
holds. A variable is "changed" when its fingerprint differs from the one after the cell
before:

- any value: its identity, length and shape -- catches re-binding, append, resize;
- a DataFrame or Series (``dataframes.fingerprint``): also its columns and dtypes, and a
  hash of its content -- all of it up to ``FULL_HASH_CELLS`` (50,000) cells (under 1 ms
  for numbers, about 10 ms for strings), else of 64 sampled rows (the first 16, the last
  16 and 32 spread in between: under a millisecond at any size). So an in-place edit of
  a large frame is noticed only if it touches a sampled row (``sales.loc[0, "units"] = 1``
  does); after other edits call ``mcp.resource_updated("sales")``.
- a numpy array: the same idea on its raw bytes (whole up to ``FULL_HASH_BYTES``, else
  64 sampled rows).

A change is announced for the variable's resource and for the resources and variable-free
templates below its URI (a frame's ``/schema``). Subscriptions to pages of a frame
(``df://sales?offset=...``) are not told: subscribe to the frame's resource.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..app import NotebookMCP
from ..registry import dataframes

_MISSING = object()
FULL_HASH_BYTES = 4 * 1024 * 1024


def fingerprint(value: Any) -> tuple[Any, ...]:
    shape = getattr(value, "shape", None)
    try:
        length = len(value)
    except Exception:
        length = None
    cheap = (id(value), length, shape if isinstance(shape, tuple) else None)
    try:
        if dataframes.is_frame(value) or dataframes.is_series(value):
            return (*cheap, dataframes.fingerprint(value))
        if _is_ndarray(value):
            return (*cheap, str(value.dtype), _array_digest(value))
    except Exception:  # an odd frame or array must not break every cell: fall back
        pass
    return cheap


def _is_ndarray(value: Any) -> bool:
    return type(value).__name__ == "ndarray" and type(value).__module__ == "numpy"


def _array_digest(array: Any) -> str:
    import numpy as np

    if array.dtype.hasobject:
        return ""  # pointers, not content: identity and shape only
    if array.nbytes > FULL_HASH_BYTES and array.ndim > 0 and len(array) > 64:
        rows = np.unique(np.linspace(0, len(array) - 1, 64).astype(np.int64))
        array = array[rows]
    return hashlib.blake2b(np.ascontiguousarray(array).data, digest_size=16).hexdigest()


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
                for changed in self._family(uri):
                    self.app.registry.resource_updated(changed)

    def _family(self, uri: str) -> list[str]:
        """``uri`` and the fixed URIs below it (e.g. ``df://sales/schema``)."""
        below = uri.rstrip("/") + "/"
        registry = self.app.registry
        fixed = [*registry.resources, *(t for t in registry.templates if "{" not in t)]
        return [uri] + [u for u in fixed if u.startswith(below)]
