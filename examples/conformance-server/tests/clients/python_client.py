"""Drives the fixture server with the official Python SDK (PyPI `mcp`): tools, and the built-in
prompts.

Usage: python_client.py <url | path-to-fixture-binary> [auto|legacy] [expected-protocol-version]
A URL connects over Streamable HTTP; a path starts the binary with --stdio. In auto mode the
client probes server/discover and speaks 2026-07-28 when the server answers it (questions then
travel as input_required results); in legacy mode it initializes a 2025-11-25 session
(questions travel as requests on the call's SSE stream). The fixture's tools ask the same way
in both. Prints PYTHON-SDK-OK on success; any failed check raises.
"""

import asyncio
import sys

from mcp import Client, StdioServerParameters, types
from mcp.shared.subscriptions import ToolsListChanged


async def answer_elicitation(context, params):
    if "Step 1" in params.message:
        return types.ElicitResult(action="accept", content={"name": "ada"})
    if "Step 2" in params.message:
        return types.ElicitResult(action="accept", content={"color": "green"})
    assert "Who are you?" in params.message, params
    return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})


async def main() -> None:
    target = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "auto"
    expected = sys.argv[3] if len(sys.argv) > 3 else "2025-11-25"
    server = target if target.startswith("http") else StdioServerParameters(command=target, args=["--stdio"])
    progress: list[float] = []

    async def on_progress(value, total, message):
        progress.append(value)

    async with Client(server, elicitation_callback=answer_elicitation, mode=mode) as client:
        assert client.protocol_version == expected, (client.protocol_version, expected)

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

        # The built-in prompts: listed with their arguments, rendered, a missing argument refused.
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        lab = prompts["explain_lab_report"]
        assert [(a.name, a.required) for a in lab.arguments] == [("file", True)], lab
        assert {"prepare_doctor_visit", "weekly_health_summary"} <= set(prompts), prompts
        rendered = await client.get_prompt("explain_lab_report", {"file": "cbc.pdf"})
        assert rendered.messages[0].role == "user", rendered
        assert "read_file" in rendered.messages[0].content.text, rendered
        visit = await client.get_prompt("prepare_doctor_visit", {"reason": "cardiology"})
        assert "cardiology" in visit.messages[0].content.text, visit
        try:
            await client.get_prompt("explain_lab_report", {})
        except Exception as refused:  # the SDK raises the JSON-RPC error
            assert "'file'" in str(refused), refused
        else:
            raise AssertionError("a missing required argument was accepted")

        if expected == "2026-07-28":
            # A question asked in turn over two rounds, each answered by the callback.
            both = await client.call_tool("test_input_required_result_multi_round", {})
            assert not both.is_error, both
            assert "likes" in both.content[0].text, both

            async with client.listen(tools_list_changed=True) as sub:
                triggered = await client.call_tool("test_trigger_tool_change", {})
                assert not triggered.is_error, triggered
                event = await asyncio.wait_for(anext(aiter(sub)), 10)
                assert isinstance(event, ToolsListChanged), event

    print("PYTHON-SDK-OK", mode, "http" if target.startswith("http") else "stdio")


asyncio.run(main())
