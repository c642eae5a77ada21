// validate.mjs SCHEMA DASHBOARD...: each dashboard against Grafana's dashboard schema (the JSON
// Schema that ts-json-schema-generator makes of @grafana/schema's Dashboard type), strict: an
// unknown property is an error, as a typo in a field name would be. The import envelope
// (__inputs, __elements, __requires) is Grafana's import format, not the dashboard model, so it
// is left out. Prints "ok FILE" or one "FAIL FILE PATH message" per error; exits 1 on any.
import Ajv from "ajv";
import { readFileSync } from "node:fs";

const [schemaFile, ...files] = process.argv.slice(2);
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(JSON.parse(readFileSync(schemaFile, "utf8")));
let failed = 0;
for (const file of files) {
  const dashboard = JSON.parse(readFileSync(file, "utf8"));
  for (const key of Object.keys(dashboard)) if (key.startsWith("__")) delete dashboard[key];
  if (validate(dashboard)) {
    console.log(`ok ${file}`);
    continue;
  }
  failed++;
  for (const e of validate.errors) {
    console.log(`FAIL ${file} ${e.instancePath || "/"} ${e.message} ${JSON.stringify(e.params)}`);
  }
}
process.exit(failed ? 1 : 0);
