"""``mcp/listPrompts``: ``prompts/list``, then ``prompts/get`` of each, rendered with each
argument as its own placeholder."""

from __future__ import annotations

import asyncio
from typing import Any

from ..jsonrpc import RpcError
from .base import READ_CONCURRENCY, SeedBase
from .translate import placeholders, prompt_stub, rendered_prompt


class PromptMethods(SeedBase):
    async def _list_prompts(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        prompts = [p for p in await self._list_all("prompts") if isinstance(p.get("name"), str)]
        limit = asyncio.Semaphore(READ_CONCURRENCY)

        async def one(prompt: dict[str, Any]) -> dict[str, Any]:
            async with limit:
                return await self._prompt_definition(prompt)

        return list(await asyncio.gather(*map(one, prompts)))

    async def _prompt_definition(self, prompt: dict[str, Any]) -> dict[str, Any]:
        arguments = [a for a in prompt.get("arguments") or [] if isinstance(a, dict)]
        definition = prompt_stub(self._mcp_id("prompts", prompt["name"]), prompt)
        extra: dict[str, Any] = {"arguments": arguments} if arguments else {}
        values = placeholders(arguments)
        try:
            rendered = await self.call("prompts/get", {"name": prompt["name"], "arguments": values})
        except RpcError as error:
            return {**definition, **extra, "contentError": error.message}
        extra.update(rendered_prompt(definition, rendered))
        return {**definition, **extra}
