// v8.mjs answers for JavaScript's RegExp(p, "u"), the reference the
// differential test compares internal/pattern with. Each line of standard
// input is {"p": pattern, "in": [inputs]}; each line of output is
// {"ok": true, "m": [whether each input contains a match]} or
// {"ok": false, "err": the SyntaxError's message}.
import { createInterface } from 'node:readline';

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
const out = [];
for await (const line of lines) {
  const { p, in: inputs } = JSON.parse(line);
  let re;
  try {
    re = new RegExp(p, 'u');
  } catch (e) {
    out.push(JSON.stringify({ ok: false, err: String(e.message) }));
    continue;
  }
  const t0 = Date.now();
  out.push(JSON.stringify({ ok: true, m: inputs.map((s) => re.test(s)) }));
  if (process.env.V8_SLOW && Date.now() - t0 > 200) console.error(Date.now() - t0, p);
}
process.stdout.write(out.join('\n') + '\n');
