// Interop check: MCP tasks (2025-11-25) through `preflightd proxy`, with
// the official TypeScript client in front and the npm server-everything
// behind it (its simulate-research-query tool requires task augmentation).
//
//   node proxy_tasks.mjs http://127.0.0.1:8090/mcp
//
// The client calls the tool as a task, polls it (tasks/get) until it
// completes, reads its result (tasks/result) and lists the tasks
// (tasks/list): requests the proxy's downstream transport does not take
// itself. Exit status 0 means every check passed.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { check, endpoint, finish } from './checks.mjs';

const url = endpoint();

const client = new Client({ name: 'preflight-proxy-tasks', version: '1.0.0' }, { capabilities: { tasks: {} } });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

let taskId;

await check('the upstream declares tasks through the proxy', async () => {
  const tasks = client.getServerCapabilities().tasks;
  assert.ok(tasks?.requests?.tools?.call, `tasks capability: ${JSON.stringify(tasks)}`);
});

await check('a task-augmented call is created, polled and its result read', async () => {
  const { tools } = await client.listTools(); // tells the client which tools are tasks
  assert.ok(tools.some((t) => t.name === 'simulate-research-query'));
  const seen = [];
  let result;
  const stream = client.experimental.tasks.callToolStream(
    { name: 'simulate-research-query', arguments: { topic: 'proxies' } }, undefined, { task: { ttl: 60000 } });
  for await (const m of stream) {
    seen.push(m.type);
    if (m.type === 'taskCreated') taskId = m.task.taskId;
    if (m.type === 'error') throw m.error;
    if (m.type === 'result') result = m.result;
  }
  assert.equal(seen[0], 'taskCreated', `messages: ${seen}`);
  assert.ok(seen.includes('taskStatus'), `no status was polled: ${seen}`);
  assert.ok(result, `no result: ${seen}`);
  assert.match(result.content[0].text, /Research Report: proxies/);
});

await check('tasks/get and tasks/list answer for the task', async () => {
  const task = await client.experimental.tasks.getTask(taskId);
  assert.equal(task.taskId, taskId);
  assert.equal(task.status, 'completed');
  const { tasks } = await client.experimental.tasks.listTasks();
  assert.ok(tasks.some((t) => t.taskId === taskId), `tasks/list: ${JSON.stringify(tasks)}`);
});

await check('the session goes on', async () => {
  const res = await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
  assert.match(res.content[0].text, /5/);
});

await client.close();
finish();
