"""Type-hint adjustments pydantic needs on older Pythons."""

from __future__ import annotations

import functools
import sys
import types
import typing
from typing import Any

import typing_extensions


def pydantic_ready(hint: Any) -> Any:
    """Before 3.12 pydantic rejects ``typing.TypedDict``: rebuild it from typing_extensions.

    Notebook users write ``from typing import TypedDict``; this keeps that working inside
    unions, containers and ``Annotated`` as well.
    """
    if sys.version_info >= (3, 12):
        return hint
    if typing.is_typeddict(hint) and type(hint).__module__ == "typing":
        return _rebuilt_typeddict(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if not args or origin is None or origin is typing.Literal:
        return hint
    if origin is typing_extensions.Annotated:
        return typing_extensions.Annotated[(pydantic_ready(args[0]), *args[1:])]
    new_args = tuple(pydantic_ready(a) for a in args)
    if new_args == args:
        return hint
    if origin is types.UnionType or origin is typing.Union:
        return typing.Union[new_args]  # noqa: UP007 - built from a tuple of arguments
    return hint.copy_with(new_args) if hasattr(hint, "copy_with") else origin[new_args]


@functools.cache
def _rebuilt_typeddict(cls: type) -> Any:
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {
        key: pydantic_ready(value)
        if key in cls.__required_keys__
        else typing_extensions.NotRequired[pydantic_ready(value)]
        for key, value in hints.items()
    }
    rebuilt = typing_extensions.TypedDict(cls.__name__, fields)  # type: ignore[operator]
    rebuilt.__doc__ = cls.__doc__
    return rebuilt
