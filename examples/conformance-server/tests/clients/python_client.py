"""Drives the fixture server with the official Python SDK (PyPI `mcp`).

Usage: python_client.py <url | path-to-fixture-binary> [auto|legacy]
A URL connects over Streamable HTTP; a path starts the binary with --stdio.
Prints PYTHON-SDK-OK on success; any failed check raises.
"""

import asyncio
import sys

from mcp import Client, StdioServerParameters, types


async def answer_elicitation(context, params):
    assert "Who are you?" in params.message, params
    return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})


async def main() -> None:
    target = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "auto"
    server = target if target.startswith("http") else StdioServerParameters(command=target, args=["--stdio"])
    progress: list[float] = []

    async def on_progress(value, total, message):
        progress.append(value)

    async with Client(server, elicitation_callback=answer_elicitation, mode=mode) as client:
        assert client.protocol_version == "2025-11-25", client.protocol_version

        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"echo", "test_tool_with_progress", "test_elicitation"} <= names, names

        echoed = await client.call_tool("echo", {"text": "héllo"})
        assert not echoed.is_error, echoed
        assert echoed.structured_content == {"echo": "héllo"}, echoed

        await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        assert progress == [0.0, 50.0, 100.0], progress

        elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
        assert not elicited.is_error, elicited
        assert "ada@example.com" in elicited.content[0].text, elicited

        invalid = await client.call_tool("echo", {})
        assert invalid.is_error, invalid
        assert "missing required argument 'text'" in invalid.content[0].text, invalid

    print("PYTHON-SDK-OK", mode, "http" if target.startswith("http") else "stdio")


asyncio.run(main())
