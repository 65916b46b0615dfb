-- wrk script: POST a stateless MCP 2026-07-28 tools/call of echo: per-request _meta in the body,
-- the version, method and name mirrored in headers, no session.
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, mirobody"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Host"] = "localhost"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "echo"
