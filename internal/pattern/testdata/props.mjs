// props.mjs answers, for the property test, the code point ranges of
// \p{…} in node's RegExp (V8 and ICU). Standard input is one JSON array of
// property bodies (such as "sc=Greek"); standard output is one JSON array
// with, for each, its ranges as [lo, hi, lo, hi, ...] over every code point
// but the surrogates (which Go strings cannot hold), or null when V8
// refuses the body.
import { readFileSync } from 'node:fs';

const bodies = JSON.parse(readFileSync(0, 'utf8'));
let all = '';
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp === 0xd800) cp = 0xe000;
  all += String.fromCodePoint(cp);
}
const out = bodies.map((body) => {
  let re;
  try {
    re = new RegExp(`\\p{${body}}+`, 'gu');
  } catch {
    return null;
  }
  const rs = [];
  for (const m of all.matchAll(re)) {
    const lo = m[0].codePointAt(0);
    const last = m[0].codePointAt(m[0].length - (m[0].codePointAt(m[0].length - 2) > 0xffff ? 2 : 1));
    if (lo < 0xd800 && last >= 0xe000) rs.push(lo, 0xd7ff, 0xe000, last);
    else rs.push(lo, last);
  }
  return rs;
});
process.stdout.write(JSON.stringify(out));
