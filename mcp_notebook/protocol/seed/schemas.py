"""JSON Schema for the dialect: checking arguments with the document's sentences.

``jsonschema`` is imported when a seed-dialect client first needs a check: importing it
costs more than a second (its format checkers), which no other start should pay.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from ...registry.validation import shortened


def argument_problem(schema: dict[str, Any], arguments: Any, mcp_id: str) -> str | None:
    """The document's sentence for arguments that do not fit ``schema``, or None."""
    errors = sorted(validator(schema).iter_errors(arguments), key=lambda e: len(e.path))
    if not errors:
        return None
    tool = f"for tool {mcp_id}"
    for error in errors:
        if error.validator == "required" and isinstance(error.instance, dict):
            missing = [n for n in error.validator_value if n not in error.instance]
            if missing:
                name = _path([*error.path, missing[0]])
                return f"Missing required property: '{name}' in arguments {tool}"
    from jsonschema.exceptions import best_match

    error = shortened(best_match(errors))
    assert error is not None  # best_match of a non-empty list is one of its errors
    if error.path:
        return f"Invalid property: '{_path(error.path)}' in arguments {tool}: {error.message}"
    return f"Invalid arguments {tool}: {error.message}"


def output_problem(schema: dict[str, Any], output: Any) -> str | None:
    """Why ``output`` does not fit a tool's outputSchema, or None."""
    checker = validator(schema)
    if checker.is_valid(output):
        return None
    from jsonschema.exceptions import best_match

    error = shortened(best_match(checker.iter_errors(output)))
    assert error is not None  # the output is invalid: there is an error to match
    message: str = error.message
    return message


def validator(schema: dict[str, Any]) -> Any:
    return _compiled(json.dumps(schema, sort_keys=True))


def is_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and _compiled(json.dumps(schema, sort_keys=True)) is not None


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


@functools.lru_cache(maxsize=512)
def _compiled(schema_json: str) -> Any:
    """A validator for a schema (None if it is not valid JSON Schema), cached: listing and
    every execution see the same few schemas again."""
    import jsonschema

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    return cls(schema)
