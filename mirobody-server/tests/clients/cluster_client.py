"""Drives mirobody-server through a load balancer with the official Python SDK (PyPI `mcp`).

Usage: cluster_client.py <personal MCP URL> <auto|legacy> <expected protocol version> <marker>
In legacy mode the client keeps one 2025-11-25 session, whose requests the balancer spreads
over every instance (the question of `ask_user` is asked on the call's stream, answered by a
POST that may land elsewhere); in auto mode it speaks 2026-07-28 (the question comes back as an
input_required result, retried with the answer wherever it lands). Prints PYTHON-SDK-OK.
"""

import asyncio
import sys

from mcp import Client, types


async def answer(context, params):
    assert "Which units?" in params.message, params
    return types.ElicitResult(action="accept", content={"choice": "Metric"})


async def main() -> None:
    url, mode, expected, marker = sys.argv[1:5]
    async with Client(url, elicitation_callback=answer, mode=mode) as client:
        assert client.protocol_version == expected, (client.protocol_version, expected)
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"ask_user", "remember", "recall_memory", "list_files"} <= names, names

        asked = await client.call_tool("ask_user", {"question": "Which units?", "options": ["Metric", "Imperial"]})
        assert not asked.is_error, asked
        assert asked.structured_content == {"answered": True, "answer": {"selected": ["Metric"]}}, asked

        # More calls than instances: the session is served by each of them in turn.
        for n in range(6):
            remembered = await client.call_tool("remember", {"text": f"The user noted {marker}n{n} today."})
            assert not remembered.is_error, remembered
        for n in range(6):
            recalled = await client.call_tool("recall_memory", {"query": f"{marker}n{n}", "top_k": 1})
            assert not recalled.is_error, recalled
            assert f"{marker}n{n}" in recalled.structured_content["memories"][0]["text"], recalled

        files = await client.call_tool("list_files", {})
        assert not files.is_error, files
        assert any(f["filename"] == "cluster.txt" for f in files.structured_content["files"]), files

    print("PYTHON-SDK-OK", mode)


asyncio.run(main())
