// The host side of MCP Apps for the view test: the official AppBridge, bundled for the page.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
window.McpAppsHost = { AppBridge, PostMessageTransport };
