// Interop check: the official TypeScript MCP client through
// `preflightd proxy` in front of the test tools of agent/mcpguard/mcptest.
//
//   node proxy_client.mjs http://127.0.0.1:8090/mcp
//
// It repeats a paid read-only call (the second is answered with the saved
// result), sends three identical calls at once to a slow tool, retries a
// call that failed terminally and sends arguments that break a tool's
// schema (both withheld with a result the model can act on), and checks
// that other requests still work. The Go test that runs it checks the
// tools' own execution counters. Exit status 0 means every check passed.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { check, endpoint, finish } from './checks.mjs';

const url = endpoint();

const client = new Client({ name: 'preflight-proxy-interop', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const call = (name, args) => client.callTool({ name, arguments: args });

// A withheld call: one text block for the model, the decision in _meta,
// and in structuredContent unless the tool declares an outputSchema (this
// client checks structuredContent against it, even on isError).
function withheld(res, code, typed) {
  assert.equal(res.isError, true, 'a withheld call is an isError result');
  assert.equal(res.content.length, 1);
  assert.match(res.content[0].text, /^not run: .*instead$/);
  const decision = res._meta['io.agentpreflight/decision'];
  assert.equal(decision.reasonCodes[0], code);
  assert.equal(decision.message, res.content[0].text);
  if (typed) {
    assert.equal(res.structuredContent, undefined);
  } else {
    assert.deepEqual(res.structuredContent.preflight, decision);
  }
}

await check('tools/list passes through', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ['big_result', 'countdown', 'create_ticket', 'flaky_search', 'market_quote']);
  const quote = tools.find((t) => t.name === 'market_quote');
  assert.equal(quote.annotations.readOnlyHint, true);
});

await check('a repeated read-only call is answered with the saved result', async () => {
  const first = await call('market_quote', { symbol: 'AAA' });
  const second = await call('market_quote', { symbol: 'AAA' });
  assert.equal(first.isError, undefined);
  assert.deepEqual(second, first);
});

await check('identical calls in one turn share one execution', async () => {
  const results = await Promise.all([1, 2, 3].map(() => call('market_quote', { symbol: 'SLOW' })));
  assert.deepEqual(results[1], results[0]);
  assert.deepEqual(results[2], results[0]);
});

await check('a terminal failure is not retried', async () => {
  const first = await call('create_ticket', { title: 'disk full' });
  assert.equal(first.isError, true);
  assert.equal(first.structuredContent, undefined, 'the first failure is the tool\'s own');
  withheld(await call('create_ticket', { title: 'disk full' }), 'RETRY_CAP_REACHED', true);
});

await check('arguments that break the schema never reach the tool', async () => {
  withheld(await call('market_quote', { symbol: '' }), 'INVALID_PAYLOAD', false);
});

await check('the session still works', async () => {
  await client.ping();
  const { tools } = await client.listTools();
  assert.equal(tools.length, 5);
});

await client.close();
finish();
