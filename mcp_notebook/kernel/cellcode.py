"""``call.to_cell()``: a recorded tool call as a new cell that makes it again.

The cell calls the function the way a person would, with the arguments the tool received:
the client's JSON converted as the server converts it (a DataFrame argument rebuilt from
its records, dates as dates, models as models), written as Python the person can read and
edit. A value whose source cannot be written so that it evaluates back to an equal value
is converted in the cell, from the JSON the client sent, through the tool's own
signature. The new cell goes below the current one through IPython's ``set_next_input``
(a ``payload`` of the execute reply, which JupyterLab, Notebook and VS Code honour).
"""

from __future__ import annotations

import datetime
import decimal
import inspect
import json
import keyword
import unicodedata
import uuid
from pathlib import PurePath
from typing import Any

from IPython import get_ipython

from ..protocol.calls import CallRecord
from ..protocol.replays import one_line

# What a cell needs imported for the sources written here; the names they are bound to.
_IMPORTS = {
    "datetime": "import datetime",
    "decimal": "import decimal",
    "uuid": "import uuid",
    "pathlib": "import pathlib",
    "pd": "import pandas as pd",
}


def to_cell(app: Any, record: CallRecord) -> str:
    """Put a new cell below the current one that makes ``record``'s call again; its code."""
    code = cell_code(app, record)
    shell = get_ipython()
    if shell is None:
        raise RuntimeError("call.to_cell() needs IPython: it puts a new cell in the notebook")
    shell.set_next_input(code, replace=False)
    return code


def cell_code(app: Any, record: CallRecord) -> str:
    """The code of a cell that calls ``record``'s tool as the call did."""
    if record.method != "tools/call":
        raise ValueError(f"only a tools/call becomes a cell, not a {record.method} call")
    if "arguments" in record.abbreviated:
        raise ValueError(
            f"call #{record.id} cannot become a cell: the history kept only an abbreviated "
            "copy of its arguments (raise %mcp history --call-kb)"
        )
    tool = app.registry.tools.get(record.target)
    if tool is None:
        raise LookupError(f"no tool {record.target!r} is registered now")
    sent = dict(record.arguments)
    received = tool.signature.convert(sent) if tool.signature else dict(sent)
    namespace = getattr(app, "namespace", None) or {}
    imports: set[str] = set()
    keywords = []
    for name in sent:
        source = _source(received.get(name, sent[name]), imports)
        if source is None:  # no faithful literal: convert the client's JSON in the cell
            source = (
                f"mcp.registry.tools[{record.target!r}].signature.convert("
                f"{{{name!r}: {_json(sent[name])}}})[{name!r}]"
            )
        if _keyword_name(name):
            keywords.append(f"    {name}={source},")
        else:  # a key only **kwargs takes: written as data, never as code
            keywords.append(f"    **{{{name!r}: {source}}},")
    function = _function_name(tool, namespace)
    skipped = [name for name in tool.injected if name not in sent]
    call = f"{function}(\n" + "\n".join(keywords) + "\n)" if keywords else f"{function}()"
    if inspect.iscoroutinefunction(tool.fn):
        call = "await " + call
    # The client names itself: on one line of printable text, so it stays in the comment.
    client, target = one_line(record.client, 200), one_line(record.target, 200)
    head = [f"# {client}'s call #{record.id} of {target}, as the tool received it"]
    if skipped:
        head.append(f"# ({', '.join(skipped)}: a Context exists only in a served call: None here)")
    lines = [*head, *sorted(_IMPORTS[name] for name in imports), call]
    return "\n".join(lines) + "\n"


def _keyword_name(name: str) -> bool:
    """Whether ``name=`` passes exactly the key ``name`` (Python reads identifiers
    NFKC-normalized: "ﬁ=" would pass "fi")."""
    return (
        name.isidentifier()
        and not keyword.iskeyword(name)
        and unicodedata.normalize("NFKC", name) == name
    )


def _function_name(tool: Any, namespace: dict[str, Any]) -> str:
    name = getattr(tool.fn, "__name__", None)
    if name and name.isidentifier() and namespace.get(name) is tool.fn:
        return str(name)
    return f"mcp.registry.tools[{tool.name!r}].fn"  # renamed, or not in the globals


def _json(value: Any) -> str:
    return repr(json.loads(json.dumps(value)))  # JSON values as Python literals


def _source(value: Any, imports: set[str]) -> str | None:
    """Python source that evaluates to a value equal to ``value``; None when unsure."""
    needs: set[str] = set()
    text = _literal(value, needs)
    if text is None:
        return None
    scope: dict[str, Any] = {}
    for name in needs:
        exec(_IMPORTS[name], scope)
    try:
        rebuilt = eval(text, scope)
    except Exception:
        return None
    if not _equal(rebuilt, value):
        return None
    imports |= needs
    return text


def _literal(value: Any, needs: set[str]) -> str | None:
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        items = [_literal(item, needs) for item in value]
        if any(item is None for item in items):
            return None
        inner = ", ".join(items)  # type: ignore[arg-type]
        if isinstance(value, tuple):
            return f"({inner},)" if len(items) == 1 else f"({inner})"
        return f"[{inner}]"
    if isinstance(value, dict):
        pairs = [(_literal(k, needs), _literal(v, needs)) for k, v in value.items()]
        if any(k is None or v is None for k, v in pairs):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        needs.add("datetime")
        return repr(value)  # datetime.date(2024, 5, 1), with its tzinfo if any
    if isinstance(value, decimal.Decimal):
        needs.add("decimal")
        return f"decimal.Decimal({str(value)!r})"
    if isinstance(value, uuid.UUID):
        needs.add("uuid")
        return f"uuid.UUID({str(value)!r})"
    if isinstance(value, PurePath):
        needs.add("pathlib")
        return f"pathlib.{type(value).__name__}({str(value)!r})"
    if type(value).__name__ == "DataFrame" and hasattr(value, "to_dict"):
        records = _literal(value.to_dict(orient="records"), needs)
        if records is None:
            return None
        needs.add("pd")
        return f"pd.DataFrame.from_records({records})"
    return None  # models, dataclasses, enums: converted in the cell


def _equal(a: Any, b: Any) -> bool:
    if hasattr(b, "equals") and type(a) is type(b):
        try:
            return bool(b.equals(a))  # DataFrame: same values and dtypes
        except Exception:
            return False
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False
