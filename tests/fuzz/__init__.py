"""Fuzz suites (hypothesis): structured cases from the MCP schemas, per transport."""
