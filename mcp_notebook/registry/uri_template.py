"""Match URIs against RFC 6570 templates, levels 1-3 ({var}, {+var}, {/var}, {?a,b}, ...)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote

_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^}]+)\}")


class UriTemplate:
    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self.query_variables: list[str] = []
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
            body = {"+": r"[^?#]*", "#": r".*", "/": r"[^?#]*"}.get(operator, r"[^/?#]+")
            prefix = {"#": r"\#", "/": "/", ".": r"\."}.get(operator, "")
            pattern += prefix + ",".join(f"(?P<{_group(n)}>{body})" for n in names)
        pattern += re.escape(template[position:])
        self._regex = re.compile(f"^{pattern}$")

    @property
    def all_variables(self) -> list[str]:
        return self.variables + self.query_variables

    def match(self, uri: str) -> dict[str, str] | None:
        found = self._regex.match(uri)
        if found is None:
            return None
        values = {name: unquote(found.group(_group(name))) for name in self.variables}
        query = found.groupdict().get("__query")
        if query:
            for key, value in parse_qsl(query, keep_blank_values=True):
                if key in self.query_variables:
                    values[key] = value
        return values


def _group(name: str) -> str:
    return "v_" + re.sub(r"\W", "_", name)
