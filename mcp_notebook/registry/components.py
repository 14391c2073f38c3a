"""The three MCP primitives (plus resource templates) as registered from cells.

Each component computes its wire definition once, at registration, so listing is a copy
of prepared dictionaries. ``invoke``/``read``/``render`` run user code and are called on
the kernel thread by the server.
"""

from __future__ import annotations

import inspect
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .blocks import BLOCK_TYPES
from .content import resource_contents, text_block, to_json_value, tool_result
from .definitions import check_definition
from .signature import SignatureModel, call_with, injected_parameters, output_schema
from .uri_template import UriTemplate
from .validation import SchemaCheck, argument_problem, check_schema
from .views import check_visibility, tool_meta

TASK_MODES = ("optional", "required", "forbidden")


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


@dataclass(eq=False)
class Tool:
    fn: Callable[..., Any]
    name: str
    title: str | None = None
    description: str | None = None
    annotations: dict[str, Any] | None = None
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    confirm: bool = False
    meta: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    # Whether a call may be answered with a task handle: "optional", "required", "forbidden".
    task: str = "optional"
    wrap_output: bool = False
    # MCP Apps: the ui:// resource that shows this tool's results, who may call it
    # ("model", "app"), and what each result carries for the view (per-call renderings).
    view_uri: str | None = None
    visibility: Sequence[str] | None = None
    view_meta: Callable[[Any], dict[str, Any] | None] | None = field(default=None, repr=False)
    # False for a tool a view calls for itself (``<name>.set``): its results are not shown
    # in a view of their own, so its listing names none (hosts list tools that name a
    # ``resourceUri`` as apps to open); it still belongs to ``view_uri``.
    shows_view: bool = True
    # OAuth scopes a caller's token needs for this tool, beyond the server's own (a
    # server without OAuth ignores them).
    scopes: frozenset[str] = frozenset()
    signature: SignatureModel | None = field(default=None, repr=False)
    definition: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        _check_callable(self.fn, self.name)
        if self.task not in TASK_MODES:
            raise ValueError(
                f"task={self.task!r}: use one of {', '.join(repr(m) for m in TASK_MODES)}"
            )
        if self.meta is not None and not isinstance(self.meta, dict):
            raise TypeError(
                f"Tool {self.name!r}: meta= must be a dict, not {type(self.meta).__name__}"
            )
        self.visibility = check_visibility(self.visibility)
        shown = self.view_uri if self.shows_view else None
        self.meta = tool_meta(self.meta, shown, self.visibility)
        self.injected = injected_parameters(self.fn)
        if self.input_schema is not None:
            check_schema(self.input_schema)  # the user's own: a clear error at registration
        else:
            self.signature = SignatureModel(self.fn, frozenset(self.injected))
            self.input_schema = self.signature.input_schema()
            if self.description is None:
                self.description = self.signature.description or None
        if self.description is None:  # strict clients want one; a model needs one
            self.description = _first_paragraph(self.fn) or sentence_from(self.name)
        if self.output_schema is None:
            self.output_schema, self.wrap_output = output_schema(self.fn)
        self._arguments = SchemaCheck(self.input_schema)
        self._output = SchemaCheck(self.output_schema) if self.output_schema else None
        self.definition = _drop_none(
            {
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "inputSchema": self.input_schema,
                "outputSchema": self.output_schema,
                "annotations": self.annotations,
                "icons": self.icons,
                "_meta": self.meta,
            }
        )
        check_definition("Tool", self.name, self.definition)

    @property
    def app_only(self) -> bool:
        """Only app views may call it (MCP Apps visibility without "model")."""
        return self.visibility is not None and "model" not in self.visibility

    def argument_error(self, arguments: dict[str, Any]) -> str | None:
        """A message naming the offending field, or None when the arguments fit the schema."""
        return argument_problem(self._arguments, self.name, arguments)

    def invoke(self, arguments: dict[str, Any], injected: dict[type, Any]) -> Any:
        """Call the function; ``injected`` maps types (e.g. Context) to values to pass."""
        kwargs = self.signature.convert(arguments) if self.signature else dict(arguments)
        for name, kind in self.injected.items():
            kwargs[name] = next((v for t, v in injected.items() if issubclass(t, kind)), None)
        return call_with(self.signature, self.fn, kwargs)

    def result(self, value: Any) -> dict[str, Any]:
        result = tool_result(value, self.wrap_output)
        if self._output is not None:
            structured = result.get("structuredContent")
            if structured is None:
                raise ValueError(
                    f"Tool '{self.name}' has an output schema (from its return annotation or "
                    "output_schema=) but returned no structured result; return a value of "
                    "that type, or ToolResult(structured=...)"
                )
            error = self._output.error(structured)
            if error is not None:
                raise ValueError(
                    f"Tool '{self.name}' returned a result that does not match its "
                    f"output schema: {error.message}"
                )
        if self.view_uri is not None:
            result = self._for_view(result, value)
        return result

    def _for_view(self, result: dict[str, Any], value: Any) -> dict[str, Any]:
        """An app tool's result: text for the model and text-only hosts, always, and
        what the view needs from this call in ``_meta``."""
        if not any(block.get("type") == "text" for block in result.get("content", [])):
            shown = (
                f"{self.title or self.name}: the result is shown in the app view {self.view_uri}."
            )
            result = {**result, "content": [text_block(shown), *result.get("content", [])]}
        extra = self.view_meta(value) if self.view_meta is not None else None
        if extra:
            result = {**result, "_meta": {**(result.get("_meta") or {}), **extra}}
        return result


def _check_callable(fn: Callable[..., Any], name: str) -> None:
    """Refuse what would register but never give a result: a class, a generator."""
    if inspect.isclass(fn):
        raise TypeError(
            f"Tool {name!r}: {fn.__name__} is a class; register a function (one that makes "
            "and uses an instance, or an instance's method)"
        )
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(
            f"Tool {name!r}: a generator function gives a generator, not a result; return "
            "its values as a list instead (a tool answers once)"
        )


@dataclass(eq=False)
class Resource:
    uri: str
    name: str
    reader: Callable[[], Any]
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    definition: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.description is None:
            self.description = f"{sentence_from(self.name).rstrip('.')} ({self.uri})."
        self.definition = _drop_none(
            {
                "uri": self.uri,
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "mimeType": self.mime_type,
                "size": self.size,
                "annotations": self.annotations,
                "_meta": self.meta,
            }
        )
        check_definition("Resource", self.name, self.definition)

    def read(self) -> Any:
        """The ``resources/read`` result, or an awaitable of it for an async reader."""
        return _read_result(self.uri, self.reader(), self.mime_type)


@dataclass(eq=False)
class ResourceTemplate:
    uri_template: str
    name: str
    fn: Callable[..., Any]
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    # Per template variable: a list of candidates, or fn(value[, arguments]) -> candidates.
    completers: dict[str, Any] = field(default_factory=dict)
    definition: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.template = UriTemplate(self.uri_template)
        self.signature = SignatureModel(self.fn)
        unknown = set(self.template.all_variables) - set(self.signature.field_names)
        if unknown and not self.signature.accepts_extra:
            raise TypeError(
                f"{self.name}() has no parameter for template variable(s) {sorted(unknown)}"
            )
        if self.description is None:
            self.description = self.signature.description or (
                f"{sentence_from(self.name).rstrip('.')} ({self.uri_template})."
            )
        self.definition = _drop_none(
            {
                "uriTemplate": self.uri_template,
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "mimeType": self.mime_type,
                "annotations": self.annotations,
            }
        )
        check_definition("Resource template", self.name, self.definition)

    def match(self, uri: str) -> dict[str, str] | None:
        return self.template.match(uri)

    def read(self, uri: str, values: dict[str, str]) -> Any:
        """The ``resources/read`` result, or an awaitable of it for an async function."""
        value = call_with(self.signature, self.fn, self.signature.convert(values))
        return _read_result(uri, value, self.mime_type)


def _read_result(uri: str, value: Any, mime_type: str | None) -> Any:
    if inspect.isawaitable(value):
        return _read_later(uri, value, mime_type)
    return {"contents": [resource_contents(uri, value, mime_type)]}


async def _read_later(uri: str, value: Any, mime_type: str | None) -> dict[str, Any]:
    return {"contents": [resource_contents(uri, await value, mime_type)]}


@dataclass(eq=False)
class Prompt:
    name: str
    render_fn: Callable[..., Any]
    arguments: list[dict[str, Any]]
    title: str | None = None
    description: str | None = None
    signature: SignatureModel | None = field(default=None, repr=False)
    completers: dict[str, Any] = field(default_factory=dict)
    injected: dict[str, type] = field(default_factory=dict)  # e.g. a Context parameter
    definition: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.definition = _drop_none(
            {
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "arguments": self.arguments,
            }
        )
        check_definition("Prompt", self.name, self.definition)

    @classmethod
    def from_template(
        cls,
        name: str,
        template: str,
        *,
        title: str | None = None,
        description: str | None = None,
        defaults: dict[str, str] | None = None,
        role: str = "user",
    ) -> Prompt:
        defaults = dict(defaults or {})
        names: list[str] = []
        for _, field_name, _, _ in string.Formatter().parse(template):
            if field_name is None:
                continue
            if not field_name.isidentifier():
                raise ValueError(
                    f"Prompt '{name}': placeholder {{{field_name}}} must be a plain name"
                )
            if field_name not in names:
                names.append(field_name)
        arguments = [{"name": n, "required": n not in defaults} for n in names]

        def render(**values: str) -> list[dict[str, Any]]:
            return [{"role": role, "content": template.format(**{**defaults, **values})}]

        if description is None:  # the template's first line says what it asks
            description = _first_line(template) or sentence_from(name)
        return cls(name, render, arguments, title=title, description=description)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> Prompt:
        injected = injected_parameters(fn)
        signature = SignatureModel(fn, frozenset(injected))
        parameters = inspect.signature(fn).parameters
        arguments = []
        for param_name in signature.field_names:
            default = parameters[param_name].default
            argument = {"name": param_name, "required": default is inspect.Parameter.empty}
            if signature.param_docs.get(param_name):
                argument["description"] = signature.param_docs[param_name]
            arguments.append(argument)
        return cls(
            name or fn.__name__,
            fn,
            arguments,
            title=title,
            description=description or signature.description or sentence_from(name or fn.__name__),
            signature=signature,
            injected=injected,
        )

    def missing_arguments(self, values: dict[str, Any]) -> list[str]:
        return [a["name"] for a in self.arguments if a["required"] and a["name"] not in values]

    def render(self, values: dict[str, str], injected: dict[type, Any] | None = None) -> Any:
        known = {a["name"] for a in self.arguments}
        kwargs: dict[str, Any] = {k: v for k, v in values.items() if k in known}
        if self.signature is not None:
            kwargs = self.signature.convert(kwargs)
        for name, kind in self.injected.items():
            kwargs[name] = next(
                (v for t, v in (injected or {}).items() if issubclass(t, kind)), None
            )
        return call_with(self.signature, self.render_fn, kwargs)

    def result(self, value: Any) -> dict[str, Any]:
        result: dict[str, Any] = {"messages": [_message(m) for m in _as_list(value)]}
        if self.description:
            result["description"] = self.description
        return result


def sentence_from(name: str) -> str:
    """A description made from a name, for a component that has none: ``get_weather``
    and ``getWeather`` -> "Get weather." (acronyms keep their case)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    words = [w for w in re.split(r"[\s_\-./:]+", spaced) if w]
    if not words:
        return name
    words = [w.lower() if w[1:].islower() or len(w) == 1 else w for w in words]
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def _first_paragraph(fn: Any) -> str | None:
    doc = inspect.getdoc(fn)
    return doc.strip().split("\n\n")[0].strip() or None if doc else None


def _first_line(text: str, limit: int = 200) -> str | None:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return (line if len(line) <= limit else line[: limit - 1] + "…") or None


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _message(value: Any) -> dict[str, Any]:
    """A ``PromptMessage`` from a str, a ``{"role", "content"}`` dict, or a (role, text) pair."""
    if isinstance(value, str):
        return {"role": "user", "content": text_block(value)}
    if isinstance(value, tuple) and len(value) == 2:
        value = {"role": value[0], "content": value[1]}
    if isinstance(value, dict) and "role" in value:
        if value["role"] not in ("user", "assistant"):
            raise ValueError(
                f"prompt message role must be 'user' or 'assistant', not {value['role']!r}"
            )
        content = value.get("content", "")
        if isinstance(content, str):
            content = text_block(content)
        elif isinstance(content, BLOCK_TYPES):
            content = content.block()
        return {"role": value["role"], "content": to_json_value(content)}
    raise TypeError(f"a prompt must return str or messages, not {type(value).__name__}")
