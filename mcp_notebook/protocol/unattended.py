"""What a tool that asks first (``confirm=True``) does when no person's front end is
attached: ``mcp-notebook serve --confirm``, an export's ``MCP_NOTEBOOK_CONFIRM``.

Imports nothing: the command line reads these choices before anything heavy loads.
"""

from __future__ import annotations

# What a tool that asks first does when no person's front end is attached.
HEADLESS = ("deny", "elicit", "allow")
HEADLESS_SAYS = {
    "deny": "tools that ask first (confirm=True) are refused: nobody is at a notebook to "
    "approve them (--confirm elicit asks the client's user instead)",
    "elicit": "tools that ask first (confirm=True) ask the client, whose own answer runs "
    "them: this protects a person using an honest client, not against a misbehaving agent",
    "allow": "tools that ask first (confirm=True) run without asking anyone",
}


def parse_headless(value: str) -> str:
    """One of :data:`HEADLESS`; ValueError that lists them otherwise."""
    word = value.strip().lower() if isinstance(value, str) else value
    if word not in HEADLESS:
        raise ValueError(f"confirmations without a notebook are one of {', '.join(HEADLESS)}")
    return str(word)


def headless_banner(mode: str) -> str:
    """The start-up line that says what a confirmation does here (on stderr)."""
    return f"Confirmations: {mode} - {HEADLESS_SAYS[mode]}."
