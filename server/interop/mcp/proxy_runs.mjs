// Interop check: the official TypeScript MCP client naming its run through
// `preflightd proxy`, both ways the proxy reads a run handle.
//
//   node proxy_runs.mjs http://127.0.0.1:8090/mcp
//
// Client A names run "ts-run-a" in its HTTP headers (Preflight-Run) and
// asks for a paid read-only quote twice: the second is the saved result.
// Client B names run "ts-run-b" the same way and asks for the same quote:
// another run, another history, so it runs again. Client C sends no header
// and names run "ts-run-a" per call in _meta ("io.agentpreflight/run"): it
// gets run A's saved result. The Go test that runs it checks the tool's
// own execution count (two). Exit status 0 means every check passed.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { check, endpoint, finish } from './checks.mjs';

const url = endpoint();

async function connect(run) {
  const client = new Client({ name: 'preflight-proxy-runs', version: '1.0.0' });
  const headers = run ? { 'Preflight-Run': run } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

const quote = (client, meta) => client.callTool({ name: 'market_quote', arguments: { symbol: 'ACME' }, ...(meta ? { _meta: meta } : {}) });

const a = await connect('ts-run-a');
const b = await connect('ts-run-b');
const c = await connect('');
let first;

await check('run A by header: the first quote runs, the second is its saved result', async () => {
  first = await quote(a);
  assert.notEqual(first.isError, true);
  const again = await quote(a);
  assert.deepEqual(again.content, first.content);
});

await check('run B by header: a history of its own, the quote runs again', async () => {
  const res = await quote(b);
  assert.notEqual(res.isError, true);
});

await check('run A by _meta from another session: run A\'s saved result', async () => {
  const res = await quote(c, { 'io.agentpreflight/run': 'ts-run-a' });
  assert.deepEqual(res.content, first.content);
});

await check('a run handle that is not visible ASCII is invalid params', async () => {
  await assert.rejects(quote(c, { 'io.agentpreflight/run': 'two words' }), (err) => err.code === -32602);
});

for (const client of [a, b, c]) await client.close();
finish();
