"""Connects to mirobody-server from nothing with the official Python SDK's OAuth client (PyPI `mcp`).

Usage: oauth_client.py <MCP URL> <email> <password> <node> <browser dir> <account page URL> <marker> <auto|legacy>

What a person sees: the client (in `auto` mode speaking 2026-07-28, which has no sessions; in
`legacy` mode 2025-11-25, its session made anonymous and going on once signed in) meets a 401, reads the protected resource metadata and the
authorization server's metadata, registers itself, and sends the person to sign in and consent
(headless Chromium does both, through tests/browser/oauth.mjs). Then `whoami` answers as that
person, and `remember` keeps <marker> among that person's memories; the access token expires (the server runs with a 2 s lifetime and no leeway) and the
client refreshes it; the person revokes the app on their access page, and the next call fails
with 401. Prints OAUTH-PYTHON-OK and a line of JSON with what it saw.
"""

import asyncio
import json
import subprocess
import sys
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

CALLBACK = "http://127.0.0.1:45987/callback"


class Memory(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None
        self.seen: list[str] = []

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.seen.append(tokens.access_token)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def main() -> None:
    mcp_url, email, password, node, browser_dir, account_url, marker, mode = sys.argv[1:9]
    storage = Memory()
    redirects: list[str] = []
    report: dict = {}

    async def redirect_handler(authorization_url: str) -> None:
        if redirects:
            report["asked_again"] = True
            raise RuntimeError("asked to sign in again after the app was revoked")
        done = subprocess.run(
            [node, "oauth.mjs", "consent", authorization_url, email, password, CALLBACK],
            cwd=browser_dir, capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        report["consent_text"] = answer["consent"]["text"]
        redirects.append(answer["redirect"])

    async def callback_handler() -> AuthorizationCodeResult:
        query = parse_qs(urlparse(redirects[-1]).query)
        report["iss"] = query.get("iss", [None])[0]
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0], iss=report["iss"])

    metadata = OAuthClientMetadata(
        client_name="Python SDK test client",
        redirect_uris=[CALLBACK],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    provider = OAuthClientProvider(mcp_url, metadata, storage, redirect_handler, callback_handler)
    try:
        async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
            async with Client(streamable_http_client(mcp_url, http_client=http), mode=mode) as client:
                first = await client.call_tool("whoami", {})
                assert not first.is_error, first
                report["whoami"] = first.structured_content or first.content[0].text
                report["protocol_version"] = client.protocol_version
                kept = await client.call_tool("remember", {"text": marker})
                assert not kept.is_error, kept
                # Past the 2 s lifetime: the next call needs a refreshed token.
                await asyncio.sleep(3)
                second = await client.call_tool("whoami", {})
                assert not second.is_error, second
                report["tokens_seen"] = len(storage.seen)
                assert len(set(storage.seen)) >= 2, "the access token was not refreshed"

                done = subprocess.run(
                    [node, "oauth.mjs", "revoke", account_url, email, password, "Python SDK test client"],
                    cwd=browser_dir, capture_output=True, text=True, timeout=120,
                )
                assert done.returncode == 0, done.stderr
                report["revoke"] = json.loads(done.stdout.strip().splitlines()[-1])
                await client.call_tool("whoami", {})
                raise AssertionError("a call after the app was revoked still worked")
    except Exception as error:  # noqa: BLE001 - the SDK wraps the refusal in an exception group
        if "revoke" not in report:
            raise
        # Refused (401, the refresh token revoked too), the client could only start over and
        # send the person to sign in again, which this test's handler refuses.
        report["after_revoke"] = repr(error)[:300]
        assert len(redirects) == 1 and report.get("asked_again"), report
    print("OAUTH-PYTHON-OK")
    print(json.dumps(report))


asyncio.run(main())
