"""Function signature -> JSON Schema for its arguments and result, via pydantic.

The schema is what clients see; arguments are checked against it with jsonschema before
the function runs and then converted to the annotated Python types by the same pydantic
model (so a ``dataclass`` parameter receives a dataclass, an ``Enum`` an enum member).
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any, Literal

import pydantic
from pydantic import ConfigDict, Field, TypeAdapter, create_model

from ..errors import McpNotebookError
from .compat import pydantic_ready
from .docstrings import parse_docstring
from .injected import Injected


class ArgumentError(McpNotebookError, ValueError):
    """Arguments that do not convert to the function's parameter types."""


class SignatureModel:
    """The arguments of one function: schema, and conversion of JSON arguments to Python."""

    def __init__(self, fn: Callable[..., Any], skip: frozenset[str] = frozenset()) -> None:
        self.description, self.param_docs = parse_docstring(inspect.getdoc(fn))
        signature = inspect.signature(fn)
        hints = _type_hints(fn)
        fields: dict[str, Any] = {}
        self.accepts_extra = False
        for name, param in signature.parameters.items():
            annotation = hints.get(name, Any)
            if name in skip:
                continue
            if param.kind is param.VAR_KEYWORD:
                self.accepts_extra = True
                continue
            if param.kind is param.VAR_POSITIONAL:
                continue
            default = ... if param.default is param.empty else param.default
            fields[name] = (annotation, Field(default, description=self.param_docs.get(name)))
        self.positional_only = [
            n for n, p in signature.parameters.items() if p.kind is p.POSITIONAL_ONLY
        ]
        extra: Literal["allow", "forbid"] = "allow" if self.accepts_extra else "forbid"
        self.model = create_model(
            f"{getattr(fn, '__name__', 'tool')}_arguments",
            __config__=ConfigDict(arbitrary_types_allowed=True, extra=extra),
            **fields,
        )
        self.field_names = list(fields)
        # Parameters that are all plain scalars: arguments of exactly those types (already
        # schema-checked) need no conversion, and missing ones take the function's defaults.
        self._exact: dict[str, type] | None = None
        if not self.accepts_extra and not self.positional_only:
            types = {name: annotation for name, (annotation, _) in fields.items()}
            if all(t in (int, float, str, bool) for t in types.values()):
                self._exact = types
        # Without them pydantic names what is missing (e.g. a template's query variable).
        self._required = frozenset(n for n, (_, f) in fields.items() if f.is_required())

    def input_schema(self) -> dict[str, Any]:
        try:
            schema: dict[str, Any] = self.model.model_json_schema()
        except (pydantic.PydanticUserError, pydantic.errors.PydanticInvalidForJsonSchema) as exc:
            raise TypeError(
                _no_schema(self.model.__name__.removesuffix("_arguments"), exc)
            ) from None
        schema.pop("title", None)
        schema.setdefault("properties", {})
        for prop in schema["properties"].values():
            _drop_titles(prop)
        if not self.accepts_extra:
            schema["additionalProperties"] = False
        return schema

    def convert(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """JSON arguments (already schema-checked) -> keyword arguments of the function."""
        exact = self._exact
        if (
            exact is not None
            and self._required <= arguments.keys()
            and all(exact.get(k) is type(v) for k, v in arguments.items())
        ):
            return dict(arguments)
        try:
            instance = self.model.model_validate(arguments)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ArgumentError(f"Invalid argument {problems}") from None
        values = {name: getattr(instance, name) for name in self.field_names}
        if self.accepts_extra and instance.model_extra:
            values.update(instance.model_extra)
        return values


def _no_schema(name: str, exc: Exception) -> str:
    """What to tell a notebook's author whose parameter types JSON Schema cannot describe
    (pydantic's own advice names a model class they never made)."""
    undefined = re.search(r"you should define `([^`]+)`", str(exc))
    if undefined:
        why = f"its parameters name a type that is not defined: {undefined.group(1)}"
    else:
        why = f"a parameter's type has no JSON Schema ({str(exc).splitlines()[0]})"
    return (
        f"{name}(): {why}. Annotate parameters with JSON types (int, str, list[...], a "
        "dataclass, TypedDict or pydantic model), or give input_schema="
    )


def call_with(
    signature: SignatureModel | None, fn: Callable[..., Any], kwargs: dict[str, Any]
) -> Any:
    """``fn(**kwargs)``, but for its positional-only parameters (``def f(a, b, /)``, most
    builtins), which go by position: the schema names them all the same."""
    if signature is None or not signature.positional_only:
        return fn(**kwargs)
    first = [kwargs.pop(name) for name in signature.positional_only if name in kwargs]
    return fn(*first, **kwargs)


def injected_parameters(fn: Callable[..., Any]) -> dict[str, type]:
    """Parameters annotated with a server-injected type (``Context``), by name."""
    found = {}
    for name, hint in _type_hints(fn).items():
        if name != "return" and isinstance(hint, type) and issubclass(hint, Injected):
            found[name] = hint
    return found


def output_schema(fn: Callable[..., Any]) -> tuple[dict[str, Any] | None, bool]:
    """Schema of the structured result from the return annotation, and whether it is wrapped.

    Objects (dataclass, TypedDict, pydantic model, dict) are the structured result as they
    are; other JSON values are wrapped as ``{"result": value}`` because ``structuredContent``
    must be an object. ``str``, ``None`` and unannotated functions have no output schema.
    """
    annotation = _type_hints(fn).get("return", inspect.Signature.empty)
    if annotation in (inspect.Signature.empty, None, type(None), str, Any):
        return None, False
    try:
        schema = TypeAdapter(annotation).json_schema(mode="serialization")
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError):
        return None, False
    if schema.get("type") == "object":
        schema.pop("title", None)
        return schema, False
    if "$ref" in schema and _resolve(schema).get("type") == "object":
        # A recursive type: its definition is in $defs; the listing says it is an object.
        schema.pop("title", None)
        return {"type": "object", **schema}, False
    wrapped = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if "$defs" in schema:
        wrapped["$defs"] = schema.pop("$defs")
    return wrapped, True


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema["$ref"].rsplit("/", 1)[-1]
    found: dict[str, Any] = schema.get("$defs", {}).get(ref, {})
    return found


def _drop_titles(schema: Any) -> None:
    # pydantic titles every property ("A", "B"); they add tokens and no meaning.
    if isinstance(schema, dict):
        schema.pop("title", None)


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception:
        # Unresolvable forward references: fall back to the raw annotations.
        hints = dict(getattr(target, "__annotations__", {}))
    return {name: pydantic_ready(hint) for name, hint in hints.items()}
