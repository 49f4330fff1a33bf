// Interop check of approvals: the official TypeScript MCP client
// (1.32.2, protocol 2025-11-25: the initialize handshake, no multi-round
// trip) through `preflightd proxy` in front of the test tools of
// agent/mcpguard/mcptest, with a tool-spec file in which market_quote
// ($0.10) needs approval above $0.05 and create_ticket always does.
//
//   node approval_client.mjs http://127.0.0.1:8090/mcp
//
// The proxy asks this client with elicitation/create requests of its own;
// the person is scripted: it approves, then declines. The Go test that
// runs it checks the tools' own execution counters and what the run
// spent. Exit status 0 means every check passed.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { check, endpoint, finish } from './checks.mjs';

const url = endpoint();

const client = new Client({ name: 'preflight-approval-interop', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
let answer = 'accept';
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params);
  if (answer === 'accept') {
    return { action: 'accept', content: { approve: true } };
  }
  return { action: answer };
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const call = (name, args) => client.callTool({ name, arguments: args });

await check('a call above the approval amount asks, showing the call, and runs once when approved', async () => {
  answer = 'accept';
  const res = await call('market_quote', { symbol: 'AAA' });
  assert.equal(asked.length, 1);
  const p = asked[0];
  assert.match(p.message, /Tool: market_quote/);
  assert.match(p.message, /Arguments: \{"symbol":"AAA"\}/);
  assert.match(p.message, /Estimated cost: \$0\.1\n/);
  assert.match(p.message, /above \$0\.05/);
  assert.deepEqual(p._meta['io.agentpreflight/approval'].arguments, { symbol: 'AAA' });
  assert.equal(p.requestedSchema.properties.approve.type, 'boolean');
  assert.notEqual(res.isError, true, JSON.stringify(res));
});

await check('a declined call runs nothing', async () => {
  answer = 'decline';
  const res = await call('market_quote', { symbol: 'BBB' });
  assert.equal(asked.length, 2);
  assert.equal(res.isError, true);
  assert.match(res.content[0].text, /^not run: the call of market_quote was not approved/);
  assert.equal(res._meta['io.agentpreflight/decision'].approval, 'declined');
});

await check('a cancelled elicitation runs nothing', async () => {
  answer = 'cancel';
  const res = await call('create_ticket', { title: 'printer on fire' });
  assert.equal(asked.length, 3);
  assert.equal(res.isError, true);
  assert.equal(res._meta['io.agentpreflight/decision'].approval, 'declined');
});

await check('an "always" tool asks every time and runs once per approval', async () => {
  answer = 'accept';
  const res = await call('create_ticket', { title: 'disk full' });
  assert.equal(asked.length, 4);
  // The ticket tool always fails terminally: the failure is its own, it ran.
  assert.equal(res.isError, true);
  assert.doesNotMatch(res.content[0].text, /^not run/);
});

await check('a call below the approval amount never asks', async () => {
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === 'countdown'));
  const res = await call('countdown', { n: 1 });
  assert.notEqual(res.isError, true, JSON.stringify(res));
  assert.equal(asked.length, 4);
});

await client.close();
finish();
