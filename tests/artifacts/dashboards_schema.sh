#!/usr/bin/env bash
# The dashboards in dashboards/ against Grafana's own dashboard schema: the TypeScript types of
# npm @grafana/schema (pinned in tests/peers/grafana_schema) turned into a JSON Schema by
# ts-json-schema-generator, every dashboard checked with ajv, strictly (an unknown property
# fails, as a misspelt field would be ignored by Grafana). And the check can fail: a panel link
# missing its fields and a property Grafana does not know are refused.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

npm_peers_install grafana_schema "@grafana/schema, ts-json-schema-generator, ajv and Node 22, about 30 s" --prefer-offline
types=$PEERS/node_modules/@grafana/schema/dist/types/raw/dashboard/x/types.gen.d.ts
expect_cmd "@grafana/schema has the dashboard types" test -f "$types"
# --no-type-check: the declarations are generated and checked upstream; type-checking the whole
# package would cost half a minute and prove nothing about the dashboards.
if (cd "$PEERS" && "$NODE" node_modules/ts-json-schema-generator/bin/ts-json-schema-generator \
  --path "$types" --type Dashboard --no-type-check -o "$T/dashboard.schema.json") >"$T/gen.out" 2>&1; then
  ok "JSON Schema of Grafana's Dashboard type generated"
else
  not_ok "ts-json-schema-generator: $(tail -5 "$T/gen.out")"
fi
expect_cmd "the schema knows panels, variables and links" \
  jq -e '.definitions | has("Panel") and has("VariableModel") and has("DashboardLink")' "$T/dashboard.schema.json"

dashboards=("$QREL_SOURCE_DIR"/dashboards/*.json)
"$NODE" "$PEERS/validate.mjs" "$T/dashboard.schema.json" "${dashboards[@]}" >"$T/validate.out" 2>&1 || true
for f in "${dashboards[@]}"; do
  if grep -qxF "ok $f" "$T/validate.out"; then
    ok "$(basename "$f") follows Grafana's dashboard schema"
  else
    not_ok "$(basename "$f") against Grafana's dashboard schema: $(grep -F "FAIL $f " "$T/validate.out" | head -10)"
  fi
done

# The negative case: the overview with a runbook link cut to a title and a URL, and a panel
# property that does not exist.
jq '(.panels[] | select(.links? | length > 0) | .links[0]) |= {title, url}
    | .panels[0].colour = "red"' "$QREL_SOURCE_DIR/dashboards/qrel-overview.json" >"$T/bad.json"
if "$NODE" "$PEERS/validate.mjs" "$T/dashboard.schema.json" "$T/bad.json" >"$T/bad.out" 2>&1; then
  not_ok "a broken dashboard passed the schema"
else
  expect_cmd "a panel link without its fields is refused" grep -q "must have required property 'asDropdown'" "$T/bad.out"
  expect_cmd "an unknown panel property is refused" grep -q '"additionalProperty":"colour"' "$T/bad.out"
fi
finish
