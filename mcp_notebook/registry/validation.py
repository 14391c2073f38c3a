r"""JSON Schema checks of tool arguments and results, on every call.

``jsonschema`` is the reference: its verdict and its messages are what clients see. It
takes about 10 µs for even a two-integer object, on the path of every call, so the
compiled ``jsonschema-rs`` answers the common question first ("is it valid?", about
0.1 µs). Only a "no" (or anything it cannot handle) goes to ``jsonschema``, which then
decides and names the problem. ``jsonschema`` is imported then, not before: importing it
costs more than a second (its format checkers), which a start should not pay when every
call so far was valid.

The two agree except where their arithmetic or regular expressions differ: a fractional
``multipleOf`` (0.3 is a multiple of 0.1 for one, not for the other) and ``pattern``s
(``\s`` and U+FEFF). Schemas that use those keywords are checked by ``jsonschema`` alone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

try:
    import jsonschema_rs
except ImportError:  # a platform without its wheels: jsonschema alone is slower, not wrong
    jsonschema_rs = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)
# jsonschema's messages quote the offending value whole: a 4 MiB argument would come back
# as a 4 MiB error. Longer messages keep their start and their end (the verdict).
MAX_MESSAGE = 500


class SchemaCheck:
    """Validates instances against one Draft 2020-12 schema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._reference: Any = None  # jsonschema's validator, made when first needed
        self.fast = _compile(schema)

    @property
    def reference(self) -> Any:
        if self._reference is None:
            import jsonschema

            self._reference = jsonschema.Draft202012Validator(self.schema)
        return self._reference

    def error(self, instance: Any) -> ValidationError | None:
        """The most relevant problem with ``instance``, or None when it fits the schema."""
        if self.fast is not None:
            try:
                if self.fast.is_valid(instance):
                    return None
            except Exception:  # e.g. an integer beyond 64 bits: the reference decides
                pass
        from jsonschema.exceptions import best_match

        return shortened(best_match(self.reference.iter_errors(instance)))


def argument_problem(check: SchemaCheck, tool: str, arguments: Any) -> str | None:
    """What a client is told of arguments that do not fit a tool's input schema: the
    offending field and the reason (None when they fit)."""
    error = check.error(arguments)
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    prefix = f"Invalid argument '{where}'" if where else "Invalid arguments"
    return f"{prefix} for tool '{tool}': {error.message}"


def check_schema(schema: dict[str, Any]) -> None:
    """Raise ``jsonschema.SchemaError`` if ``schema`` is not a Draft 2020-12 schema."""
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(schema)


def shortened(error: ValidationError | None) -> ValidationError | None:
    """``error`` with a message of at most about MAX_MESSAGE characters."""
    if error is not None and len(error.message) > MAX_MESSAGE:
        text, keep = error.message, MAX_MESSAGE // 2
        error.message = f"{text[:keep]}… [{len(text) - 2 * keep} characters cut] …{text[-keep:]}"
    return error


def _compile(schema: dict[str, Any]) -> Any:
    if jsonschema_rs is None or _may_disagree(schema):
        return None
    try:
        # offline: a schema's remote $ref is never fetched (jsonschema does not fetch either)
        return jsonschema_rs.Draft202012Validator(schema, validate_formats=False, offline=True)
    except Exception as exc:  # a schema it rejects: the reference handles it alone
        logger.debug("jsonschema-rs cannot compile %r: %s", schema, exc)
        return None


def _may_disagree(schema: Any) -> bool:
    """Whether ``schema`` uses a keyword on which the two validators can differ."""
    if isinstance(schema, list):
        return any(_may_disagree(item) for item in schema)
    if not isinstance(schema, dict):
        return False
    if "pattern" in schema or "patternProperties" in schema:
        return True
    step = schema.get("multipleOf")
    if isinstance(step, float) and not step.is_integer():
        return True
    return any(_may_disagree(value) for value in schema.values())
