// verdicts.mjs reads a JSON file of cases, [{"schema": {...}, "instances":
// [...]}], and prints one JSON line: for each case either {"valid": [bool,
// ...]} (ajv's verdict on each instance) or {"error": "..."} when ajv cannot
// compile the schema. The build is chosen by $schema: draft-07 (and
// draft-06) get ajv's default build, 2019-09 its 2019 build, anything else
// (none, or 2020-12) its 2020 build. format is an annotation, as it is by
// default in preflight.
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import Ajv2019 from "ajv/dist/2019.js";
import Ajv2020 from "ajv/dist/2020.js";
import draft6 from "ajv/dist/refs/json-schema-draft-06.json" with { type: "json" };

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const options = { strict: false, validateFormats: false, allErrors: false };

// One instance per build, reused (making one compiles its meta-schemas);
// each schema is removed again after use, so that an $id in one never
// meets another's.
const shared = new Map();
function ajvFor(schema) {
  const d = dialectOf(schema);
  if (!shared.has(d)) shared.set(d, newAjv(d));
  return shared.get(d);
}

function dialectOf(schema) {
  const dialect = typeof schema?.$schema === "string" ? schema.$schema.replace(/#$/, "") : "";
  if (dialect.startsWith("http://json-schema.org/draft-07/schema")) return "draft-07";
  if (dialect.startsWith("http://json-schema.org/draft-06/schema")) return "draft-06";
  if (dialect === "https://json-schema.org/draft/2019-09/schema") return "2019-09";
  return "2020-12";
}

function newAjv(d) {
  if (d === "draft-07") return new Ajv(options);
  if (d === "draft-06") {
    const a = new Ajv(options);
    a.addMetaSchema(draft6);
    return a;
  }
  if (d === "2019-09") return new Ajv2019(options);
  return new Ajv2020(options);
}

const out = cases.map((c) => {
  const ajv = ajvFor(c.schema);
  let validate;
  try {
    validate = ajv.compile(c.schema);
  } catch (e) {
    return { error: String(e.message ?? e) };
  }
  const valid = c.instances.map((i) => validate(i) === true);
  ajv.removeSchema(c.schema);
  return { valid };
});
process.stdout.write(JSON.stringify(out) + "\n");
