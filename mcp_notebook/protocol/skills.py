"""The Skills extension's methods (``io.modelcontextprotocol/skills``, 2026-07-28).

``skills/list`` and ``skills/get`` answer from the manifests computed when each skill was
registered (registry/skills.py), so they run on the server's thread, even while a cell
runs; ``resources/directory/read`` lists a skill directory's direct children. The files
themselves are ordinary resources, read with ``resources/read`` in every era: a 2025-era
session sees them as resources only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..registry import Registry
from ..registry.skills import SkillResource, directory
from .calls import CallLog, CallRecord
from .jsonrpc import invalid_params
from .paging import page
from .request import RequestContext
from .session import check_uri_length

Handler = Callable[[RequestContext], Awaitable[dict[str, Any]]]


def handlers(
    registry: Registry, page_size: int, calls: CallLog | None = None
) -> dict[str, Handler]:
    """The extension's method table over ``registry`` (read at each request); each
    ``skills/get`` answered is recorded in ``calls`` (``%mcp record``, ``to_pytest``)."""

    async def skills_list(request: RequestContext) -> dict[str, Any]:
        entries = [
            r.skill.entry
            for r in registry.resources.values()
            if isinstance(r, SkillResource) and r.skill is not None
        ]
        return page("skills", entries, request.params, page_size)

    async def skills_get(request: RequestContext) -> dict[str, Any]:
        uri = _uri(request.params)
        held = registry.resources.get(uri)
        if not isinstance(held, SkillResource) or held.skill is None:
            raise invalid_params(f"No skill is served at {uri}", {"uri": uri})
        result = {"skill": held.skill.entry}
        if calls is not None:
            record = calls.add(CallRecord("skills/get", uri, {}, request.session.client_label))
            record.set_status("running")  # it ran: kept under a call's limits, not a refusal's
            record.finish("done", result={"skill": held.skill.entry})
        return result

    async def directory_read(request: RequestContext) -> dict[str, Any]:
        uri = _uri(request.params)
        children = directory(registry.resources, uri)
        if children is None:
            raise invalid_params(f"{uri} is not a directory resource", {"uri": uri})
        return page("resources", children, request.params, page_size)

    return {
        "skills/list": skills_list,
        "skills/get": skills_get,
        "resources/directory/read": directory_read,
    }


def _uri(params: dict[str, Any]) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise invalid_params("The request needs params.uri, a string")
    check_uri_length(uri)  # an error message echoes the URI: keep it short
    return uri
