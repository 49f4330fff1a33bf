// params_echo.mjs: an MCP server on stdio, built with the official
// TypeScript SDK, whose tools/call handler answers every call with one
// text block holding {"name": …, "arguments": …} as the SDK handed them
// over. interop_test.go compares that reading with the guard's.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const server = new Server({ name: "params-echo", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: "echo", inputSchema: { type: "object" } }],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const echo = { name: request.params.name };
  if (request.params.arguments !== undefined) echo.arguments = request.params.arguments;
  return { content: [{ type: "text", text: JSON.stringify(echo) }] };
});
await server.connect(new StdioServerTransport());
