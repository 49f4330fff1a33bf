// props.mjs prints, as JSON, the Unicode property data ECMA-262's \p{…}
// needs, read from this node's own RegExp (V8 and ICU), so that every
// property comes from one Unicode version, the one V8 uses: the code point
// ranges of every General_Category value, Script value, Script_Extensions
// value and binary property ECMA-262 lists, and the short aliases of
// Script values. Run by "go generate" in internal/pattern, which feeds it
// Go's script names on standard input (one JSON array) and writes
// unicode_tables.go.

import { readFileSync } from 'node:fs';
import { ranges, valid } from './ranges.mjs';

// Script values: Go's (Unicode 15.0) and those Unicode added since. The
// scripts must cover every code point Unknown leaves out, each once;
// checked below, so that a newer node with a new script fails here.
const later = [
  'Garay', 'Gurung_Khema', 'Kirat_Rai', 'Ol_Onal', 'Sunuwar', 'Todhri', 'Tulu_Tigalari', // 16.0
  'Beria_Erfe', 'Sidetic', 'Tai_Yo', 'Tolong_Siki', // 17.0
];
const scripts = [...new Set([...JSON.parse(readFileSync(0, 'utf8')), ...later])].sort();

// Short Script aliases: every four-letter value V8 accepts, tied to the Go
// script whose code points it matches.
const up = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', low = 'abcdefghijklmnopqrstuvwxyz';
const bySet = new Map();
for (const s of scripts) if (valid(`sc=${s}`)) bySet.set(String(ranges(`sc=${s}`)), s);
const aliases = {};
for (const c1 of up) for (const c2 of low) for (const c3 of low) for (const c4 of low) {
  const code = c1 + c2 + c3 + c4;
  if (!valid(`sc=${code}`)) continue;
  const owner = bySet.get(String(ranges(`sc=${code}`)));
  if (owner && owner !== code) (aliases[owner] ??= []).push(code);
}

// The two-letter General_Category values; every other value ECMA-262
// accepts is a union of them (see props.go).
const gc = {};
for (const c of ['Cc', 'Cf', 'Cn', 'Co', 'Cs', 'Ll', 'Lm', 'Lo', 'Lt', 'Lu', 'Mc', 'Me', 'Mn', 'Nd', 'Nl', 'No',
  'Pc', 'Pd', 'Pe', 'Pf', 'Pi', 'Po', 'Ps', 'Sc', 'Sk', 'Sm', 'So', 'Zl', 'Zp', 'Zs']) gc[c] = ranges(`gc=${c}`);

const sc = {};
for (const s of scripts) {
  if (!valid(`sc=${s}`)) throw new Error(`node does not know the script ${s}`);
  sc[s] = ranges(`sc=${s}`);
}
// Every code point in exactly one script (Unknown included) and exactly
// one category: a script or category missing from the lists above, or
// a range read wrong, fails the generation.
for (const [what, sets] of [['script', sc], ['General_Category value', gc]]) {
  const owner = new Uint8Array(0x110000);
  for (const rs of Object.values(sets)) {
    for (let i = 0; i < rs.length; i += 2) for (let cp = rs[i]; cp <= rs[i + 1]; cp++) owner[cp]++;
  }
  const bad = owner.findIndex((n) => n !== 1);
  if (bad >= 0) throw new Error(`U+${bad.toString(16).toUpperCase()} is in ${owner[bad]} ${what}s`);
}

const scx = {};
for (const s of scripts) if (valid(`scx=${s}`)) scx[s] = ranges(`scx=${s}`);

// ECMA-262's table of binary Unicode properties, long name and alias.
const binary = [
  ['ASCII'], ['ASCII_Hex_Digit', 'AHex'], ['Alphabetic', 'Alpha'], ['Any'], ['Assigned'],
  ['Bidi_Control', 'Bidi_C'], ['Bidi_Mirrored', 'Bidi_M'], ['Case_Ignorable', 'CI'], ['Cased'],
  ['Changes_When_Casefolded', 'CWCF'], ['Changes_When_Casemapped', 'CWCM'],
  ['Changes_When_Lowercased', 'CWL'], ['Changes_When_NFKC_Casefolded', 'CWKCF'],
  ['Changes_When_Titlecased', 'CWT'], ['Changes_When_Uppercased', 'CWU'], ['Dash'],
  ['Default_Ignorable_Code_Point', 'DI'], ['Deprecated', 'Dep'], ['Diacritic', 'Dia'], ['Emoji'],
  ['Emoji_Component', 'EComp'], ['Emoji_Modifier', 'EMod'], ['Emoji_Modifier_Base', 'EBase'],
  ['Emoji_Presentation', 'EPres'], ['Extended_Pictographic', 'ExtPict'], ['Extender', 'Ext'],
  ['Grapheme_Base', 'Gr_Base'], ['Grapheme_Extend', 'Gr_Ext'], ['Hex_Digit', 'Hex'],
  ['IDS_Binary_Operator', 'IDSB'], ['IDS_Trinary_Operator', 'IDST'], ['ID_Continue', 'IDC'],
  ['ID_Start', 'IDS'], ['Ideographic', 'Ideo'], ['Join_Control', 'Join_C'],
  ['Logical_Order_Exception', 'LOE'], ['Lowercase', 'Lower'], ['Math'],
  ['Noncharacter_Code_Point', 'NChar'], ['Pattern_Syntax', 'Pat_Syn'],
  ['Pattern_White_Space', 'Pat_WS'], ['Quotation_Mark', 'QMark'], ['Radical'],
  ['Regional_Indicator', 'RI'], ['Sentence_Terminal', 'STerm'], ['Soft_Dotted', 'SD'],
  ['Terminal_Punctuation', 'Term'], ['Unified_Ideograph', 'UIdeo'], ['Uppercase', 'Upper'],
  ['Variation_Selector', 'VS'], ['White_Space', 'space'], ['XID_Continue', 'XIDC'],
  ['XID_Start', 'XIDS'],
].filter(([name]) => valid(name)).map(([name, alias]) => ({ name, alias: alias ?? '', ranges: ranges(name) }));

process.stdout.write(JSON.stringify({ unicode: process.versions.unicode, aliases, gc, sc, scx, binary }));
