"""Standard MCP results in the dialect's shapes: pure functions, no requests.

The session asks the standard server (``tools/list``, ``resources/read``, ...) and hands
the answers to these to build the document's ToolDefinition, ResourceDefinition and
PromptDefinition, and the output of ``mcp/executeTool``.
"""

from __future__ import annotations

import json
from typing import Any

from ...wire import jsontext
from .schemas import is_schema

PERMISSIVE_SCHEMA: dict[str, Any] = {
    "description": "Unstructured output: the tool's text, null when it returned nothing, "
    "or MCP content blocks (images, binary data)."
}
ROLES = ("system", "user", "assistant")


def tool_definition(mcp_id: str, tool: dict[str, Any]) -> dict[str, Any]:
    """A ToolDefinition; a schema that is not valid JSON Schema is replaced by a lenient one."""
    input_schema = tool.get("inputSchema")
    output_schema = tool.get("outputSchema")
    return {
        "mcpId": mcp_id,
        "name": tool["name"],
        "description": description(tool),
        "inputSchema": input_schema if is_schema(input_schema) else {"type": "object"},
        "outputSchema": output_schema if is_schema(output_schema) else PERMISSIVE_SCHEMA,
    }


def output(result: dict[str, Any], typed: bool) -> Any:
    """``structuredContent`` if any; else the text (as JSON when a schema is promised)."""
    if "structuredContent" in result:
        return result["structuredContent"]
    blocks = result.get("content") or []
    if not blocks:
        return None
    if not all(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
        return blocks
    joined = "\n".join(str(b.get("text", "")) for b in blocks)
    if typed:
        try:
            return jsontext.loads(joined)  # strict: a NaN token is text, not a number
        except ValueError:
            pass
    return joined


def resource_stub(mcp_id: str, resource: dict[str, Any]) -> dict[str, Any]:
    """A ResourceDefinition before its content is read."""
    return {
        "mcpId": mcp_id,
        "name": str(resource.get("name") or resource["uri"]),
        "description": description(resource),
        "mediaType": resource.get("mimeType") or "text/plain",
        "content": "",
    }


def read_content(definition: dict[str, Any], read: dict[str, Any], uri: str) -> tuple[str, int]:
    """The content of a ``resources/read`` result for ``uri`` and its size in bytes; sets
    the definition's media type (and encoding, for binary content)."""
    contents = [c for c in read.get("contents") or [] if isinstance(c, dict)]
    entry = next((c for c in contents if c.get("uri") == uri), None)
    entry = entry or (contents[0] if contents else {})
    if isinstance(entry.get("blob"), str):
        definition["mediaType"] = entry.get("mimeType") or "application/octet-stream"
        definition["contentEncoding"] = "base64"  # the JSON Schema keyword for this
        return entry["blob"], len(entry["blob"]) * 3 // 4
    content = str(entry.get("text", ""))
    definition["mediaType"] = entry.get("mimeType") or definition["mediaType"]
    return content, len(content.encode())


def prompt_stub(mcp_id: str, prompt: dict[str, Any]) -> dict[str, Any]:
    """A PromptDefinition before the prompt is rendered."""
    return {
        "mcpId": mcp_id,
        "name": prompt["name"],
        "description": description(prompt),
        "role": "user",
        "content": "",
    }


def placeholders(arguments: list[dict[str, Any]]) -> dict[str, str]:
    """Each argument as its own placeholder, so a template comes back as written."""
    return {a["name"]: "{" + a["name"] + "}" for a in arguments if isinstance(a.get("name"), str)}


def rendered_prompt(definition: dict[str, Any], rendered: dict[str, Any]) -> dict[str, Any]:
    """Fill the definition from a ``prompts/get`` result; returns the extra fields (the
    messages, when there are several)."""
    messages = [m for m in rendered.get("messages") or [] if isinstance(m, dict)]
    texts = [text([m.get("content")]) for m in messages]
    if messages:
        role = messages[0].get("role")
        definition["role"] = role if role in ROLES else "user"
        definition["content"] = "\n\n".join(texts)
    if len(messages) < 2:
        return {}
    pairs = zip(messages, texts, strict=True)
    return {"messages": [{"role": m.get("role"), "content": t} for m, t in pairs]}


def text(blocks: Any) -> str:
    """The text of content blocks; other kinds are named, not inlined."""
    parts = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "resource" and isinstance(block.get("resource"), dict):
            parts.append(str(block["resource"].get("text", f"[{block['resource'].get('uri')}]")))
        else:
            parts.append(f"[{block.get('type', 'unknown')} content]")
    return "\n".join(parts)


def description(item: dict[str, Any]) -> str:
    return str(item.get("description") or item.get("title") or "")


def log_text(params: dict[str, Any]) -> str:
    """A standard log notification as the line ``$/logTrace`` carries."""
    data = params.get("data")
    body = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    source = f" {params['logger']}" if isinstance(params.get("logger"), str) else ""
    return f"[{params.get('level', 'info')}]{source} {body}"
