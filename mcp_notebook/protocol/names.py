"""HTTP header names and ``_meta`` keys of MCP, defined once for the server and the bridge."""

from __future__ import annotations

# -- HTTP headers (Streamable HTTP) ----------------------------------------------------------
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
# 2026-07-28 (SEP-2243): the body mirrored into headers for intermediaries.
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
PARAM_HEADER_PREFIX = "Mcp-Param-"  # + the name an ``x-mcp-header`` annotation gives
HEADER_ANNOTATION = "x-mcp-header"
# Which params field ``Mcp-Name`` mirrors (the tasks extension names its task the same way).
NAME_FIELDS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

# -- _meta keys (2026-07-28: every request says who it is) -----------------------------------
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
META_PROGRESS_TOKEN = "progressToken"  # every era: the client wants progress for this request
META_RELATED_TASK = "io.modelcontextprotocol/related-task"  # 2025-11-25 tasks
# The bridge to the notebook's server: the last progress it sent for a request it held
# while the notebook started (bridge/held.py), so the server's own goes on above it.
META_PROGRESS_SENT = "mcp-notebook/progressSent"
# Tasks: the 2026-07-28 extension's name (versions.TASKS_VERSION: the handshake revision).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
# MCP Apps (registry/views.py says the same: the core below cannot import this module).
APPS_EXTENSION = "io.modelcontextprotocol/ui"
# Agent Skills over MCP (registry/skills.py says the same; protocol/skills.py serves it).
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
# What a request must carry to say who sent it (what the bridge copies into its own).
REQUEST_META_KEYS = (META_VERSION, META_CAPABILITIES, META_CLIENT_INFO)
