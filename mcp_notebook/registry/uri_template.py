"""Match URIs against RFC 6570 templates, levels 1-3 ({var}, {+var}, {/var}, {?a,b}, ...).

A matched value is percent-decoded exactly once (as UTF-8) and handed to the user's
function, which often builds a file path from it. So a value is refused (the URI matches
no template, and the client gets "resource not found") when it could step out of a folder:

- ``{var}``, ``{.var}``, ``{;var}`` (simple expansion percent-encodes reserved characters):
  the decoded value never contains ``/``, ``\\`` or NUL, and is never ``.`` or ``..``.
- ``{+var}``, ``{#var}``, ``{/var}`` (reserved and path expansion): ``/`` is allowed, but the
  decoded value is always relative (no leading ``/``), no ``/``-separated segment is ``.``
  or ``..``, and it never contains ``\\`` or NUL.
- ``{?a}``, ``{&a}``: query values, decoded as such (``+`` is a space); any character.

A value that is not valid UTF-8 once decoded is refused too.
"""

from __future__ import annotations

import ntpath
import os
import re
from urllib.parse import parse_qsl, unquote

_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^}]+)\}")
# Operators whose values may carry "/": reserved, fragment and path-segment expansion.
_SLASHED = frozenset("+#/")
_DOT_SEGMENTS = frozenset({".", ".."})


class UriTemplate:
    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self.query_variables: list[str] = []
        self._slashed: set[str] = set()
        pattern = ""
        position = 0
        for match in _EXPRESSION.finditer(template):
            pattern += re.escape(template[position : match.start()])
            position = match.end()
            operator, names = match.group(1), [n.strip() for n in match.group(2).split(",")]
            names = [n.rstrip("*") for n in names]
            if operator in ("?", "&"):
                self.query_variables += names
                # Query parameters are optional and parsed separately, in any order.
                if "(?P<__query>" not in pattern:
                    pattern += r"(?:[?&](?P<__query>.*))?"
                continue
            self.variables += names
            if operator in _SLASHED:
                self._slashed.update(names)
            body = {"+": r"[^?#]*", "#": r".*", "/": r"[^?#]*"}.get(operator, r"[^/?#]+")
            prefix = {"#": r"\#", "/": "/", ".": r"\."}.get(operator, "")
            pattern += prefix + ",".join(f"(?P<{_group(n)}>{body})" for n in names)
        pattern += re.escape(template[position:])
        self._regex = re.compile(f"^{pattern}$")

    @property
    def all_variables(self) -> list[str]:
        return self.variables + self.query_variables

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's values in ``uri``, or None if it does not match or a value is unsafe."""
        found = self._regex.match(uri)
        if found is None:
            return None
        values: dict[str, str] = {}
        try:
            for name in self.variables:
                value = unquote(found.group(_group(name)), errors="strict")
                if not _safe(value, slashed=name in self._slashed):
                    return None
                values[name] = value
            query = found.groupdict().get("__query")
            if query:
                for key, value in parse_qsl(query, keep_blank_values=True, errors="strict"):
                    if key in self.query_variables:
                        values[key] = value
        except UnicodeDecodeError:
            return None
        return values


def _safe(value: str, *, slashed: bool) -> bool:
    """Whether a decoded value stays inside the folder a function might join it to."""
    if "\\" in value or "\0" in value:
        return False
    if os.name == "nt" and ntpath.splitdrive(value)[0]:
        return False  # "C:..." names another drive
    if not slashed:
        return "/" not in value and value not in _DOT_SEGMENTS
    return not value.startswith("/") and _DOT_SEGMENTS.isdisjoint(value.split("/"))


def _group(name: str) -> str:
    return "v_" + re.sub(r"\W", "_", name)
