// Interop check of approvals with the 2026-07-28 multi-round trip over
// the official TypeScript SDK's Streamable HTTP transport. SDK 1.32.2 has
// no client-side support for input_required results, so the requests are
// written here as the revision defines them and sent with the SDK's
// StreamableHTTPClientTransport, which carries the HTTP exchange
// (headers, JSON or event-stream answers) unchanged.
//
//   node approval_mrtr.mjs http://127.0.0.1:8090/mcp
//
// The proxy's tool-spec file makes create_ticket always ask. Checked: the
// first call is answered input_required with an elicitation showing the
// call; a tampered requestState, a decline and a replay of a used
// approval run nothing; the accept runs the call. The Go test that runs
// it counts the tool's executions. Exit status 0 means every check
// passed.

import assert from 'node:assert/strict';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { check, endpoint, finish } from './checks.mjs';

const url = endpoint();

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'create_ticket' } },
});
transport.setProtocolVersion('2026-07-28');
const waiting = new Map();
transport.onmessage = (m) => {
  if (m.id !== undefined && waiting.has(m.id)) {
    waiting.get(m.id)(m);
    waiting.delete(m.id);
  }
};
await transport.start();

let nextID = 0;
function call(extra) {
  const id = ++nextID;
  const params = {
    name: 'create_ticket',
    arguments: { title: 'printer on fire' },
    ...extra,
    _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
      'io.modelcontextprotocol/clientInfo': { name: 'preflight-approval-mrtr', version: '1.0.0' },
    },
  };
  return new Promise((resolve, reject) => {
    waiting.set(id, (m) => (m.error ? reject(new Error(JSON.stringify(m.error))) : resolve(m.result)));
    transport.send({ jsonrpc: '2.0', id, method: 'tools/call', params }).catch(reject);
  });
}
const KEY = 'io.agentpreflight/approval';
const answer = (state, response) => call({ requestState: state, inputResponses: { [KEY]: response } });
const accept = { action: 'accept', content: { approve: true } };
const approvalOf = (res) => res._meta?.['io.agentpreflight/decision']?.approval;

let state;
await check('the first call asks: input_required with an elicitation showing the call', async () => {
  const res = await call({});
  assert.equal(res.resultType, 'input_required');
  const req = res.inputRequests[KEY];
  assert.equal(req.method, 'elicitation/create');
  assert.match(req.params.message, /Tool: create_ticket\nArguments: \{"title":"printer on fire"\}/);
  assert.equal(req.params.requestedSchema.properties.approve.type, 'boolean');
  assert.equal(typeof res.requestState, 'string');
  state = res.requestState;
});

await check('a tampered requestState runs nothing', async () => {
  const tampered = state.slice(0, -4) + (state.endsWith('AAAA') ? 'BBBB' : 'AAAA');
  const res = await answer(tampered, accept);
  assert.equal(res.isError, true);
  assert.equal(approvalOf(res), 'invalid');
});

await check('a decline runs nothing', async () => {
  const asked = await call({});
  const res = await answer(asked.requestState, { action: 'decline' });
  assert.equal(res.isError, true);
  assert.equal(approvalOf(res), 'declined');
});

await check('the accept runs the call', async () => {
  const res = await answer(state, accept);
  assert.equal(approvalOf(res), undefined, JSON.stringify(res));
  // The ticket tool always fails terminally: the failure is its own, it ran.
  assert.doesNotMatch(res.content[0].text, /^not run/);
});

await check('the used approval replayed runs nothing', async () => {
  const res = await answer(state, { action: 'accept', content: { approve: true, again: true } });
  assert.equal(res.isError, true);
  assert.equal(approvalOf(res), 'used');
});

await transport.close();
finish();
