// props.mjs answers, for the property test, the code point ranges of
// \p{…} in node's RegExp (V8 and ICU), read as gen/ranges.mjs reads them
// to write unicode_tables.go. Standard input is one JSON array of property
// bodies (such as "sc=Greek"); standard output is one JSON array with, for
// each, its ranges as [lo, hi, lo, hi, ...], or null when V8 refuses the
// body.
import { readFileSync } from 'node:fs';
import { ranges, valid } from '../gen/ranges.mjs';

const bodies = JSON.parse(readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(bodies.map((body) => (valid(body) ? ranges(body) : null))));
