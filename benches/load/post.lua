-- wrk script: POST a tools/call of echo on the session in MCP_SESSION (if set), with the bearer
-- token in MCP_TOKEN (if set).
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, mirobody"}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Host"] = "localhost"
-- As the SDK clients send it on every request after initialize.
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
local session = os.getenv("MCP_SESSION")
if session and session ~= "" then
  wrk.headers["Mcp-Session-Id"] = session
end
local token = os.getenv("MCP_TOKEN")
if token and token ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. token
end
