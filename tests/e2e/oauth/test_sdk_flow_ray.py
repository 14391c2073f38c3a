"""The official SDK client's OAuth flow against an export's replicas on Ray Serve: every
replica checks the same authorization server's tokens (Ray is heavy: one test does all)."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from tests.e2e.export.test_export_ray import start_cluster, stop_cluster
from tests.oauth.authorization_server import AuthorizationServer
from tests.oauth.sdk_client import oauth_client
from tests.oauth.servers import ADMIN, GRANTABLE, READ, WRITE, auth_environ, exported, free_port


async def test_the_sdk_client_gets_into_ray_serve_replicas_by_its_oauth_flow(tmp_path):
    issuer = AuthorizationServer(grantable=GRANTABLE, scopes_supported=(READ, WRITE, ADMIN))
    issuer.start()
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    environ: dict[str, str | None] = {**auth_environ(issuer, url), "MCP_NOTEBOOK_TOKEN": None}
    # at "/" (serve run's default): the metadata's root well-known path reaches the export
    process, served = start_cluster(
        exported(tmp_path),
        2,
        module="protected_mcp.notebook",
        environ=environ,
        port=port,
        route_prefix="/",
    )
    try:
        assert served == url
        async with oauth_client(url) as (client, session):
            assert {t.name for t in (await client.list_tools()).tools} >= {"add", "whoami"}
            for a in range(4):  # in auto mode requests spread over the replicas
                assert (await client.call_tool("add", {"a": a})).content[0].text == str(a + 1)
            assert (await client.call_tool("whoami", {})).content[0].text == f"alice {READ}"
            assert (await client.call_tool("note", {"text": "x"})).content[0].text == "noted: x"
            with pytest.raises(MCPError, match="insufficient scope, needs notebook:admin"):
                await client.call_tool("wipe", {})
        found = session.provider.context.protected_resource_metadata
        assert found is not None and str(found.resource) == url
        assert issuer.sent("register") and issuer.sent("token")[0]["resource"] == url
        asked = issuer.sent("authorize")[0]
        assert asked["resource"] == url and asked["code_challenge_method"] == "S256"
        assert len(session.browser.visits) == 3  # the first, then one step-up for each tool
    finally:
        stop_cluster(process)
        issuer.stop()
