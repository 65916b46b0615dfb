// Drives the fixture server with the official TypeScript SDK (@modelcontextprotocol/sdk).
// Usage: node typescript_client.mjs <url | path-to-fixture-binary>
// Prints TS-SDK-OK on success; a failed check throws.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const target = process.argv[2];
const transport = target.startsWith("http")
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args: ["--stdio"] });

const client = new Client({ name: "mirobody-ts-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  assert.match(request.params.message, /Who are you\?/);
  return { action: "accept", content: { username: "ada", email: "ada@example.com" } };
});
await client.connect(transport);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
for (const name of ["echo", "test_tool_with_progress", "test_elicitation"]) assert.ok(names.includes(name), names.join(","));

const echoed = await client.callTool({ name: "echo", arguments: { text: "héllo" } });
assert.equal(echoed.isError, false);
assert.deepEqual(echoed.structuredContent, { echo: "héllo" });

const progress = [];
await client.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
  onprogress: (p) => progress.push(p.progress),
});
assert.deepEqual(progress, [0, 50, 100]);

const elicited = await client.callTool({ name: "test_elicitation", arguments: { message: "Who are you?" } });
assert.equal(elicited.isError, false);
assert.match(elicited.content[0].text, /ada@example\.com/);

const invalid = await client.callTool({ name: "echo", arguments: {} });
assert.equal(invalid.isError, true);

await client.close();
console.log("TS-SDK-OK", target.startsWith("http") ? "http" : "stdio");
