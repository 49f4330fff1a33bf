// Interop check: the official TypeScript MCP client against a running
// preflight server's /mcp endpoint.
//
//   node client.mjs http://127.0.0.1:8080/mcp
//
// It connects over Streamable HTTP (initialize handshake), lists the tools,
// calls both tools with results and with input errors, and checks that every
// result carries one text block whose JSON deep-equals structuredContent.
// The SDK client itself validates structuredContent against each tool's
// outputSchema, so a schema that does not fit a result fails here too.
// Exit status 0 means every check passed; each failure is printed.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = process.argv[2];
if (!url) {
  console.error('usage: node client.mjs <mcp endpoint url>');
  process.exit(2);
}

const order = {
  type: 'object',
  required: ['sku', 'qty'],
  properties: { sku: { type: 'string' }, qty: { type: 'integer', minimum: 1 } },
};
const search = {
  runId: 'run-1',
  stepId: 'step-1',
  tool: {
    provider: 'search',
    operation: 'web_search',
    request: { query: 'model context protocol', max_results: 5 },
    estimatedExternalCostUsd: 0.01,
  },
  budget: { remainingUsd: 1 },
};

// Each call: the arguments, whether it is an input error (isError), and a
// check on the structured result.
const calls = [
  {
    name: 'check_request: valid body',
    tool: 'check_request',
    args: { request: { method: 'POST', url: 'https://api.example.com/v1/orders', body: { sku: 'A1', qty: 2 } }, schema: order },
    isError: false,
    expect: (r) => {
      assert.equal(r.valid, true);
      assert.match(r.requestHash, /^[a-f0-9]{64}$/);
    },
  },
  {
    name: 'check_request: invalid body with economics',
    tool: 'check_request',
    args: {
      request: { method: 'POST', url: 'https://api.example.com/v1/orders', body: { qty: 0 } },
      schema: order,
      economics: { downstreamCostUsd: 0.05, billsOnInvalidRequest: true, retryCostUsd: 0.01 },
    },
    isError: false,
    expect: (r) => {
      assert.equal(r.valid, false);
      assert.ok(r.errors.length >= 2, 'expected a required and a minimum error');
      assert.equal(r.economics.decision, 'abort');
    },
  },
  {
    name: 'check_request: unsupported schema keyword is an input error',
    tool: 'check_request',
    args: { request: { method: 'GET', url: 'https://a.example' }, schema: { format: 'email' } },
    isError: true,
    expect: (r) => assert.equal(r.error.code, 'unsupported_schema_keyword'),
  },
  {
    name: 'check_request: empty arguments are an input error',
    tool: 'check_request',
    args: {},
    isError: true,
    expect: (r) => assert.equal(r.error.code, 'invalid_request'),
  },
  {
    name: 'preflight_tool_call: allow',
    tool: 'preflight_tool_call',
    args: search,
    isError: false,
    expect: (r) => {
      assert.equal(r.decision, 'allow');
      assert.equal(r.enforcement, 'execute');
      assert.deepEqual(r.reasonCodes, ['NO_PROVEN_WASTE']);
    },
  },
  {
    name: 'preflight_tool_call: block on an invalid payload',
    tool: 'preflight_tool_call',
    args: { ...search, tool: { ...search.tool, request: { query: '', max_results: 11 } } },
    isError: false,
    expect: (r) => {
      assert.equal(r.decision, 'block');
      assert.ok(r.issues.length > 0, 'expected payload issues');
    },
  },
  {
    name: 'preflight_tool_call: defer when over budget',
    tool: 'preflight_tool_call',
    args: { ...search, budget: { remainingUsd: 0.005 } },
    isError: false,
    expect: (r) => assert.equal(r.decision, 'defer'),
  },
  {
    name: 'preflight_tool_call: missing runId is an input error',
    tool: 'preflight_tool_call',
    args: { ...search, runId: undefined },
    isError: true,
    expect: (r) => assert.equal(r.error.code, 'invalid_request'),
  },
];

let failures = 0;
async function step(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (err) {
    failures++;
    console.log(`FAIL ${name}: ${err && err.message ? err.message : err}`);
  }
}

const client = new Client({ name: 'preflight-interop', version: '0.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(url));

await step('connect and initialize', async () => {
  await client.connect(transport);
  assert.equal(client.getServerVersion()?.name, 'preflight');
  assert.ok(client.getServerCapabilities()?.tools, 'server must advertise tools');
  console.log(`     protocol ${transport.protocolVersion ?? '(not set)'}`);
});

await step('tools/list', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ['check_request', 'preflight_tool_call']);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', `${t.name} inputSchema.type`);
    assert.equal(t.outputSchema?.type, 'object', `${t.name} outputSchema.type`);
    assert.ok(t.title && t.description && t.description.length > 200, `${t.name} title and description`);
  }
});

for (const c of calls) {
  await step(c.name, async () => {
    const res = await client.callTool({ name: c.tool, arguments: c.args });
    assert.equal(res.isError ?? false, c.isError, 'isError');
    assert.equal(res.content.length, 1, 'one content block');
    assert.equal(res.content[0].type, 'text');
    assert.ok(res.structuredContent, 'structuredContent present');
    assert.deepStrictEqual(res.structuredContent, JSON.parse(res.content[0].text));
    c.expect(res.structuredContent);
  });
}

await step('unknown tool is a protocol error', async () => {
  await assert.rejects(client.callTool({ name: 'execute', arguments: {} }), (err) => {
    assert.equal(err.code, -32602);
    assert.match(err.message, /unknown tool "execute": the tools are "check_request" and "preflight_tool_call"/);
    return true;
  });
});

await client.close();
const total = calls.length + 3;
console.log(failures === 0 ? `PASS ${total} checks` : `FAIL ${failures} of ${total} checks`);
process.exit(failures === 0 ? 0 : 1);
