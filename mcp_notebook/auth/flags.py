"""The ``--auth-*`` options of ``serve`` and ``%mcp start``, and nothing else: the command
line builds its parser on every start (the stdio bridge's too), so this imports nothing;
config.py reads what they hold when a server starts."""

from __future__ import annotations

from typing import Any


def add_flags(parser: Any) -> None:
    """The ``--auth-*`` options, on an argparse parser or IPython's magic_arguments."""
    add = parser.add_argument
    add("--auth-issuer", metavar="URL", help="OAuth issuer whose access tokens are accepted")
    add("--auth-jwks-url", metavar="URL", help="its JWKS (default: from its metadata)")
    add("--auth-audience", metavar="URI", help="this server's resource URI (default: its URL)")
    add(
        "--auth-extra-audiences",
        metavar="A,B",
        help="other aud values naming this server (Entra ID: the API's client id)",
    )
    add("--auth-scopes", metavar="A,B", help="scopes every request needs")
    add("--auth-introspection-url", metavar="URL", help="check opaque tokens by RFC 7662")
    add("--auth-client-id", metavar="ID", help="client id for introspection")
    add(
        "--auth-client-secret-env",
        metavar="VAR",
        help="environment variable holding the introspection client secret",
    )
