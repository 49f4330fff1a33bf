// What the scripts run against `preflightd proxy` share: the endpoint URL
// from the command line, named checks that report each failure and go on,
// and the last line (PASS, or how many failed) with the exit status.

import path from 'node:path';

// endpoint returns the proxy's MCP endpoint URL, the script's one
// argument, or exits with the usage.
export function endpoint() {
  const url = process.argv[2];
  if (!url) {
    console.error(`usage: node ${path.basename(process.argv[1])} <proxy mcp endpoint url>`);
    process.exit(2);
  }
  return url;
}

let failures = 0;

// check runs fn and prints "ok" or "FAIL" with name (and the error).
export async function check(name, fn) {
  try {
    await fn();
    console.log('ok  ', name);
  } catch (err) {
    failures++;
    console.log('FAIL', name, '\n', err);
  }
}

// finish prints PASS when every check passed, or how many failed, and
// exits 0 or 1.
export function finish() {
  console.log(failures === 0 ? 'PASS' : `${failures} FAILED`);
  process.exit(failures === 0 ? 0 : 1);
}
