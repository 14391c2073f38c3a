"""The seed document's definitions (ToolDefinition, ...) as JSON Schema, for its tests."""

TOOL_DEFINITION = {
    "type": "object",
    "properties": {
        "mcpId": {"type": "string"},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object"},
    },
    "required": ["mcpId", "name", "description", "inputSchema", "outputSchema"],
}

RESOURCE_DEFINITION = {
    "type": "object",
    "properties": {
        "mcpId": {"type": "string"},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "mediaType": {"type": "string"},
        "content": {"type": "string"},
    },
    "required": ["mcpId", "name", "description", "mediaType", "content"],
}

PROMPT_DEFINITION = {
    "type": "object",
    "properties": {
        "mcpId": {"type": "string"},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "role": {"type": "string", "enum": ["system", "user", "assistant"]},
        "content": {"type": "string"},
    },
    "required": ["mcpId", "name", "role", "content"],
}

SERVER_CAPABILITIES = {  # the document's TypeScript interface, as JSON Schema
    "type": "object",
    "properties": {
        "listToolsProvider": {"type": "boolean"},
        "listResourcesProvider": {"type": "boolean"},
        "listPromptsProvider": {"type": "boolean"},
        "executionProvider": {
            "type": "object",
            "properties": {"execute": {"type": "boolean"}},
            "required": ["execute"],
        },
    },
    "required": ["listToolsProvider", "listResourcesProvider", "listPromptsProvider"],
}
