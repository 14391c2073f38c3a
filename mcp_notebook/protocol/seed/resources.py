"""``mcp/listResources`` (``resources/list``, then ``resources/read`` of each, inline) and
the resource notifications: ``mcp/resourceDidChange`` from subscriptions to every
resource, ``mcp/listResourcesDidChange`` from the standard list change."""

from __future__ import annotations

import asyncio
from typing import Any

from ..jsonrpc import RpcError
from .base import READ_CONCURRENCY, SeedBase, logger
from .naming import resource_ids
from .translate import read_content, resource_stub


class ResourceMethods(SeedBase):
    _resource_ids: dict[str, str]  # uri -> mcpId, from the last listing
    _resources_seen: dict[str, dict[str, Any]]  # mcpId -> standard definition
    _subscribed: set[str]
    _resources_dirty: bool
    _refresh: asyncio.Task[None] | None

    async def _list_resources(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        resources = await self._resources()
        ids = self._remember(resources)
        limit = asyncio.Semaphore(READ_CONCURRENCY)

        async def one(resource: dict[str, Any], mcp_id: str) -> dict[str, Any]:
            async with limit:
                return await self._resource_definition(resource, mcp_id)

        definitions = await asyncio.gather(*map(one, resources, ids))
        if self.initialized:
            self._spawn(self._subscribe_resources())
        return list(definitions)

    async def _resources(self) -> list[dict[str, Any]]:
        return [r for r in await self._list_all("resources") if isinstance(r.get("uri"), str)]

    def _remember(self, resources: list[dict[str, Any]]) -> list[str]:
        """The mcpIds of a listing, remembered for notifications about them."""
        ids = resource_ids(self._server, resources)
        self._resource_ids = {r["uri"]: i for r, i in zip(resources, ids, strict=True)}
        self._resources_seen = dict(zip(ids, resources, strict=True))
        return ids

    async def _resource_definition(self, resource: dict[str, Any], mcp_id: str) -> dict[str, Any]:
        definition = resource_stub(mcp_id, resource)
        size = resource.get("size")
        if isinstance(size, int) and size > self.max_inline_bytes:
            definition["contentError"] = self._too_large(size)
            return definition
        try:
            read = await self.call("resources/read", {"uri": resource["uri"]})
        except RpcError as error:
            definition["contentError"] = error.message
            return definition
        content, size = read_content(definition, read, resource["uri"])
        if size > self.max_inline_bytes:
            definition["contentError"] = self._too_large(size)
        else:
            definition["content"] = content
        return definition

    def _too_large(self, size: int) -> str:
        return f"Content omitted: {size} bytes is over the {self.max_inline_bytes}-byte limit"

    async def _subscribe_resources(self) -> None:
        resources_caps = self._standard_caps.get("resources")
        if self.notify_out is None or not isinstance(resources_caps, dict):
            return
        if not resources_caps.get("subscribe"):
            return
        if not self._resource_ids:
            self._remember(await self._resources())
        for uri in list(self._resource_ids):
            if uri in self._subscribed:
                continue
            self._subscribed.add(uri)  # before awaiting, so that concurrent runs skip it
            try:
                await self.call("resources/subscribe", {"uri": uri})
            except RpcError as error:
                self._subscribed.discard(uri)
                logger.debug("could not subscribe to %s: %s", uri, error.message)

    def _resource_updated(self, params: dict[str, Any]) -> None:
        uri = params.get("uri")
        mcp_id = self._resource_ids.get(uri) if isinstance(uri, str) else None
        if mcp_id is not None:
            self._emit("mcp/resourceDidChange", {"mcpId": mcp_id})

    def _resources_changed(self, params: dict[str, Any]) -> None:
        self._resources_dirty = True
        if self._refresh is None or self._refresh.done():
            self._refresh = self._spawn(self._refresh_resources())

    async def _refresh_resources(self) -> None:
        # An mcpId that appeared, went, or now names another resource (a name moved to a
        # new URI) changed for the client; content changes in place come as `updated`.
        while self._resources_dirty:
            self._resources_dirty = False
            before = self._resources_seen
            self._remember(await self._resources())
            after = self._resources_seen
            self._emit("mcp/listResourcesDidChange", {})
            for mcp_id in dict.fromkeys([*after, *before]):
                if before.get(mcp_id) != after.get(mcp_id):
                    self._emit("mcp/resourceDidChange", {"mcpId": mcp_id})
            await self._subscribe_resources()
