// Compiles every JSON Schema under schemas/ with Ajv in 2020-12 mode, strict,
// with formats asserted, so a schema the agents download is one a standard
// validator accepts. Usage: node tools/check-schemas.mjs [schemas-dir]
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const root = process.argv[2] ?? "schemas";

function jsonFiles(dir) {
  return readdirSync(dir).sort().flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? jsonFiles(p) : name.endsWith(".json") ? [p] : [];
  });
}

const ajv = new Ajv2020({ strict: true, allErrors: true, validateFormats: true });
addFormats(ajv);

let failed = 0;
const files = jsonFiles(root);
for (const file of files) {
  const name = relative(root, file);
  try {
    const schema = JSON.parse(readFileSync(file, "utf8"));
    const want = "https://consensus.md/schemas/" + name.replace(/\.json$/, "");
    if (schema.$id !== want) throw new Error(`$id is ${JSON.stringify(schema.$id)}, want ${JSON.stringify(want)}`);
    if (schema.$schema !== "https://json-schema.org/draft/2020-12/schema") throw new Error("$schema must name draft 2020-12");
    ajv.compile(schema);
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.error(`FAIL ${name}: ${err.message}`);
  }
}
if (files.length === 0) {
  console.error(`no schemas found under ${root}`);
  process.exit(1);
}
process.exit(failed ? 1 : 0);
