"""``mcp/listTools`` and ``mcp/executeTool``: ``tools/list`` (id -> name, schemas), then
``tools/call``, with the dialect's argument and output checks."""

from __future__ import annotations

from typing import Any

from ..codes import INVALID_PARAMS
from .base import SeedBase
from .errors import OUTPUT_MISMATCH, TOOL_FAILED, SeedError
from .schemas import argument_problem, output_problem
from .translate import PERMISSIVE_SCHEMA, output, text, tool_definition

ToolTable = dict[str, tuple[dict[str, Any], dict[str, Any]]]


class ToolMethods(SeedBase):
    async def _tool_table(self) -> ToolTable:
        """mcpId -> (standard tool, dialect ToolDefinition), freshly listed."""
        table = {}
        for tool in await self._list_all("tools"):
            if isinstance(tool.get("name"), str):
                definition = tool_definition(self._mcp_id("tools", tool["name"]), tool)
                table[definition["mcpId"]] = (tool, definition)
        return table

    async def _list_tools(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        return [definition for _, definition in (await self._tool_table()).values()]

    async def _execute_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        mcp_id, arguments = _execute_params(params)
        found = (await self._tool_table()).get(mcp_id)
        if found is None:
            raise SeedError(INVALID_PARAMS, f"Unknown tool: {mcp_id} (see mcp/listTools)")
        tool, definition = found
        problem = argument_problem(definition["inputSchema"], arguments, mcp_id)
        if problem is not None:
            raise SeedError(INVALID_PARAMS, problem)
        result = await self.call("tools/call", {"name": tool["name"], "arguments": arguments})
        if result.get("isError"):
            said = text(result.get("content")) or "the tool reported an error"
            raise SeedError(TOOL_FAILED, f"Tool {mcp_id} failed: {said}")
        typed = definition["outputSchema"] is not PERMISSIVE_SCHEMA
        value = output(result, typed)
        if typed:
            problem = output_problem(definition["outputSchema"], value)
            if problem is not None:
                raise SeedError(OUTPUT_MISMATCH, f"Tool {mcp_id} returned: {problem}")
        return {"output": value}


def _execute_params(params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The mcpId and arguments of ``mcp/executeTool``, or the document's error."""
    mcp_id = params.get("id")
    if not isinstance(mcp_id, str):
        problem = "Invalid property" if "id" in params else "Missing required property"
        raise SeedError(
            INVALID_PARAMS, f"{problem}: 'id' in params for mcp/executeTool: the tool's mcpId"
        )
    arguments = params.get("arguments")
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict):
        raise SeedError(
            INVALID_PARAMS,
            f"Invalid property: 'arguments' in params for tool {mcp_id}: must be an object",
        )
    return mcp_id, arguments
