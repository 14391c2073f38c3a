"""The OAuth 2.1 resource server of an MCP endpoint (MCP authorization, 2025-11-25).

Imported only when auth is configured (``serve --auth-issuer``, ``MCP_AUTH_ISSUER`` in an
export, ``%mcp start --auth-issuer``): joserfc, the JOSE library that checks signatures,
is an optional extra (``pip install "mcp-notebook[oauth]"``).

- :mod:`.config`: what a deployment configures (issuer, JWKS URL, audience, scopes,
  introspection), from command-line flags or environment variables;
- :mod:`.fetching`: bounded HTTP GET/POST (time and size) on a worker thread;
- :mod:`.keys`: the issuer's JWKS, cached, refetched on rotation at most once a cooldown;
- :mod:`.tokens`: a JWT access token checked (signature, issuer, audience, times);
- :mod:`.introspection`: an opaque token asked about (RFC 7662);
- :mod:`.challenge`: the ``WWW-Authenticate`` answers and the protected-resource metadata
  document (RFC 9728);
- :mod:`.resource`: the verdict on one request's ``Authorization`` header.

Its direction: it imports the protocol core (``Caller``) and nothing above it; the
transports import it.
"""
