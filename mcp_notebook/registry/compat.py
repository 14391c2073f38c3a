"""Type-hint adjustments before pydantic sees a hint.

Two jobs, both applied through unions, containers and ``Annotated``:

- ``coercion.pydantic_hint`` swaps ``bytes`` and ``pandas.DataFrame`` for annotations that
  parse them from JSON (base64, array of row objects) and describe them in the schema.
- Before 3.12 pydantic rejects ``typing.TypedDict``: it is rebuilt from typing_extensions.
"""

from __future__ import annotations

import functools
import sys
import types
import typing
from typing import Any

import typing_extensions

from .coercion import pydantic_hint

_OLD_TYPEDDICT = sys.version_info < (3, 12)


def pydantic_ready(hint: Any) -> Any:
    """``hint`` as pydantic should see it (see the module docstring)."""
    swapped = pydantic_hint(hint)
    if swapped is not hint:
        return swapped
    if _OLD_TYPEDDICT and typing.is_typeddict(hint) and type(hint).__module__ == "typing":
        return _rebuilt_typeddict(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if not args or origin is None or origin is typing.Literal:
        return hint
    if origin is typing_extensions.Annotated:
        inner = pydantic_ready(args[0])
        if inner is args[0]:
            return hint
        arguments = (inner, *hint.__metadata__)
        return typing_extensions.Annotated[arguments]
    new_args = tuple(pydantic_ready(a) for a in args)
    if all(new is old for new, old in zip(new_args, args, strict=True)):
        return hint
    if origin is types.UnionType or origin is typing.Union:
        return typing.Union[new_args]  # noqa: UP007 - built from a tuple of arguments
    return hint.copy_with(new_args) if hasattr(hint, "copy_with") else origin[new_args]


@functools.cache
def _rebuilt_typeddict(cls: Any) -> Any:
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {
        key: pydantic_ready(value)
        if key in cls.__required_keys__
        else typing_extensions.NotRequired[pydantic_ready(value)]
        for key, value in hints.items()
    }
    rebuilt = typing_extensions.TypedDict(cls.__name__, fields)  # type: ignore[misc]
    rebuilt.__doc__ = cls.__doc__
    return rebuilt
