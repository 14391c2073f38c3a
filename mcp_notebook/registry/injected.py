"""Parameters the server fills in itself; they never appear in a tool's input schema."""


class Injected:
    """Base of types the server injects into user functions (e.g. ``Context``)."""
