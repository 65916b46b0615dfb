"""A model's turn over the official Python SDK (PyPI `mcp`): read the demo's lab report, record its values.

Usage: record_client.py <personal MCP URL> <marker>
The script stands in for the model: it finds the PDF lab report with list_files, reads it with
read_file, takes each printed result (name, value, unit, reference range) from the text, and
records them with record_health_data, linked to the file. The first try names white cells as
the report prints them, which the catalog does not know: the call is refused, naming that
value and why, and stores nothing; sent again with its LOINC code, all four are recorded.
fetch_health_data then finds them, flagged, with the file as their source; recording them
again stores nothing new; and once the person confirms deleting the file, they are gone.
Prints RECORD-SDK-OK.
"""

import asyncio
import re
import sys

from mcp import Client, types

RESULT = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?) ([0-9.]+) (\S+) \(([0-9.]+)-([0-9.]+)\)\s*$", re.MULTILINE)
COLLECTED = re.compile(r"Collected: (\d{4}-\d{2}-\d{2})")


async def confirm(context, params):
    assert "cannot be undone" in params.message, params
    return types.ElicitResult(action="accept", content={"confirm": True})


def text_of(result):
    return " ".join(block.text for block in result.content if getattr(block, "text", None))


async def main() -> None:
    url, marker = sys.argv[1:3]
    async with Client(url, elicitation_callback=confirm) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"read_file", "record_health_data", "fetch_health_data", "delete_health_data"} <= names, names

        files = (await client.call_tool("list_files", {})).structured_content["files"]
        report = next(f for f in files if f["mime"] == "application/pdf")
        key = report["file_key"]
        read = await client.call_tool("read_file", {"file_key": key})
        assert not read.is_error, read
        text = read.structured_content["content"]
        collected = COLLECTED.search(text).group(1)
        values = [
            {
                "indicator": name,
                "value": float(value),
                "unit": unit,
                "time": collected,
                "reference_low": float(low),
                "reference_high": float(high),
            }
            for name, value, unit, low, high in RESULT.findall(text)
        ]
        assert [v["indicator"] for v in values] == ["Hemoglobin", "White cells", "Platelets", "Glucose"], text

        # White cells as printed is no name the catalog knows: refused, naming it, nothing stored.
        refused = await client.call_tool("record_health_data", {"values": values, "file_key": key})
        assert refused.is_error, refused
        why = text_of(refused)
        assert why.startswith("Nothing was recorded: 1 of 4 values is wrong.") and "values[1] (White cells)" in why, why
        nothing = await client.call_tool("fetch_health_data", {"indicators": ["glucose"]})
        assert nothing.structured_content.get("not_found") == ["glucose"], nothing

        values[1]["code"] = "6690-2"
        recorded = await client.call_tool("record_health_data", {"values": values, "file_key": key})
        assert not recorded.is_error, recorded
        answer = recorded.structured_content
        assert answer["recorded"] == 4 and answer["source"] == {"file_key": key}, answer
        assert [v["flag"] for v in answer["values"]] == ["normal"] * 4, answer

        fetched = await client.call_tool("fetch_health_data", {"indicators": ["glucose", "hemoglobin", "platelets", "wbc"]})
        assert not fetched.is_error, fetched
        series = fetched.structured_content["indicators"]
        points = [p for s in series.values() for p in s["data"] if p.get("file_key") == key]
        assert len(points) == 4, series
        # Flagged against the catalog's range; hemoglobin's depends on sex, so the catalog has none
        # and only the report's own range, which the answer above used, can flag it.
        flags = {p["value"]: p.get("flag") for p in points}
        assert flags[5.4] == flags[250] == flags[6.2] == "normal", series
        assert flags[14.1] in (None, "normal"), series
        assert {p["value"] for p in points} == {14.1, 6.2, 250, 5.4}, series

        again = await client.call_tool("record_health_data", {"values": values, "file_key": key})
        assert again.structured_content["recorded"] == 0 and again.structured_content["already_recorded"] == 4, again

        deleted = await client.call_tool("delete_health_data", {"kind": "file", "id": key})
        assert deleted.structured_content == {"deleted": True, "kind": "file", "id": key}, deleted
        gone = await client.call_tool("fetch_health_data", {"indicators": ["glucose", "hemoglobin", "platelets", "wbc"]})
        left = [p for s in gone.structured_content["indicators"].values() for p in s["data"] if p.get("file_key") == key]
        assert left == [], gone

    print("RECORD-SDK-OK", marker)


asyncio.run(main())
