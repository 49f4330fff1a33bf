// ranges.mjs reads Unicode property data from this node's own RegExp (V8
// and ICU). It serves gen/props.mjs, which writes unicode_tables.go, and
// testdata/props.mjs, which the property test compares those tables with.

// Every code point but the surrogates, in order, so that a run of matches
// is a run of consecutive code points (D7FF and E000 meet; split there).
let all = '';
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp === 0xd800) cp = 0xe000;
  all += String.fromCodePoint(cp);
}

// ranges returns the code points of \p{prop} as [lo, hi, lo, hi, ...].
export function ranges(prop) {
  const out = [];
  for (const m of all.matchAll(new RegExp(`\\p{${prop}}+`, 'gu'))) {
    const cps = Array.from(m[0]);
    const lo = cps[0].codePointAt(0), hi = cps[cps.length - 1].codePointAt(0);
    if (lo < 0xd800 && hi >= 0xe000) out.push(lo, 0xd7ff, 0xe000, hi);
    else out.push(lo, hi);
  }
  // A lone surrogate is a code point of its own in u-mode RegExp.
  const one = new RegExp(`^\\p{${prop}}$`, 'u');
  if (one.test('\ud800')) {
    // Surrogates behave as one block for every property.
    out.push(0xd800, 0xdfff);
    out.sort((a, b) => a - b);
  }
  return out;
}

// valid reports whether V8 accepts \p{prop} under the u flag.
export function valid(prop) {
  try { new RegExp(`\\p{${prop}}`, 'u'); return true; } catch { return false; }
}
