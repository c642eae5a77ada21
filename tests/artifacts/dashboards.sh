#!/usr/bin/env bash
# The Grafana dashboards in dashboards/ import and provision anywhere: valid JSON in Grafana's
# import format, the Prometheus datasource a `datasource` variable every panel and variable uses
# (no import input, so file provisioning needs no edit), fixed and unique uids, the template
# variables the docs name, every selector following the cluster and job variables, the data
# links and runbook links going to dashboards, variables and runbook sections that exist, and
# every panel query valid PromQL (promtool parses each one as a recording rule). And
# every qrel_* metric the dashboards and alert rules name is one the exporter exports and
# docs/metrics.md documents, so a renamed metric breaks the build, not a dashboard.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

dashboards=$QREL_SOURCE_DIR/dashboards
docs=$QREL_SOURCE_DIR/docs/metrics.md
command -v promtool >/dev/null || { echo "promtool missing (Debian package prometheus; scripts/deps.sh)" >&2; exit 1; }

# The files and uids other docs and tests rely on, and each one's template variables.
declare -A want_vars=(
  [qrel-overview]="datasource cluster job source queue"
  [qrel-lease]="datasource cluster job source queue"
  [qrel-dead-letters]="datasource cluster job source queue"
  [qrel-exporter]="datasource cluster job source"
)
files=("$dashboards"/*.json)
expect_eq "dashboard files" "$(cd "$dashboards" && echo *.json)" "qrel-dead-letters.json qrel-exporter.json qrel-lease.json qrel-overview.json"

: > "$T/exprs"
for f in "${files[@]}"; do
  name=$(basename "$f" .json)
  if ! jq empty "$f" 2>"$T/jq.err"; then not_ok "$name: invalid JSON: $(cat "$T/jq.err")"; continue; fi
  ok "$name is valid JSON"
  expect_eq "$name uid (fixed, the file's name)" "$(jq -r .uid "$f")" "$name"
  expect_eq "$name id (null for import)" "$(jq -r .id "$f")" null
  expect_eq "$name: no import input (the datasource is a variable)" "$(jq -r '.__inputs // [] | length' "$f")" 0
  expect_eq "$name datasource variable" \
    "$(jq -r '.templating.list[] | select(.name == "datasource") | "\(.type) \(.query) hide=\(.hide)"' "$f")" "datasource prometheus hide=0"
  expect_eq "$name requires" "$(jq -r '[.__requires[] | select(.type != "panel") | .id] | sort | join(" ")' "$f")" "grafana prometheus"
  # Every panel type used is declared in __requires (Grafana checks them on import).
  expect_eq "$name panel types required" \
    "$(jq -r '[.panels[].type | select(. != "row")] | unique | join(" ")' "$f")" \
    "$(jq -r '[.__requires[] | select(.type == "panel") | .id] | sort | join(" ")' "$f")"
  expect_between "$name schemaVersion (Grafana 9/10)" "$(jq -r .schemaVersion "$f")" 36 39
  # Every datasource reference is the datasource variable, except Grafana's built-in annotations.
  expect_eq "$name datasources" \
    "$(jq -r '[.. | objects | select(has("datasource")) | .datasource | if type == "object" then .uid else "string:\(.)" end] | unique | join(" ")' "$f")" \
    '${datasource} -- Grafana --'
  expect_eq "$name built-in annotation only" \
    "$(jq -r '[.. | objects | select(.datasource? | type == "object" and .uid == "-- Grafana --")] | length' "$f")" 1
  expect_eq "$name template variables" "$(jq -r '[.templating.list[].name] | join(" ")' "$f")" "${want_vars[$name]}"
  expect_eq "$name variables come from label_values" \
    "$(jq -r '[.templating.list[] | select(.type != "datasource") | select(.type != "query" or (.query | test("^label_values\\(") | not)) | .name] | join(" ")' "$f")" ""
  expect_eq "$name cluster variable: hidden, All matching a missing label" \
    "$(jq -r '.templating.list[] | select(.name == "cluster") | "hide=\(.hide) all=\(.includeAll) \(.allValue)"' "$f")" "hide=2 all=true .*"
  # Every selector, in panels and variables, follows the cluster variable (and the job variable,
  # a single one on the exporter dashboard): a multi-cluster Prometheus shows one cluster at once.
  jq -r '[.panels[].targets[]?.expr, (.templating.list[] | select(.type == "query") | .query)] | .[]' "$f" |
    grep -oE '(qrel_[a-z0-9_]+|up|scrape_duration_seconds|process_[a-z_]+)?\{[^}]*\}|qrel_[a-z0-9_]+([^a-z0-9_{]|$)' \
    > "$T/selectors"
  expect_cmd "$name selectors found" test "$(wc -l < "$T/selectors")" -ge 5
  expect_eq "$name selectors without the cluster or job matcher" \
    "$(grep -vE 'cluster=~"\$cluster", job=~?"\$job"|^qrel_build_info\{cluster=~"\$cluster"\}$' "$T/selectors" | grep -v '^qrel_build_info[,)]' | sort -u)" ""
  expect_eq "$name panels without a query" \
    "$(jq -r '[.panels[] | select(.type != "row") | select((.targets // []) | map(select((.expr // "") != "")) | length == 0) | .title] | join(", ")' "$f")" ""
  expect_eq "$name targets without an expr" \
    "$(jq -r '[.panels[] | .targets[]? | select((.expr // "") == "")] | length' "$f")" 0
  expect_eq "$name panel ids unique" "$(jq -r '[.panels[].id] | (length == (unique | length))' "$f")" true
  jq -r --arg d "$name" '.panels[] | .title as $t | .targets[]? | [$d, $t, .refId, .expr] | @tsv' "$f" >> "$T/exprs"
done
expect_eq "uids unique" "$(jq -r .uid "${files[@]}" | sort | uniq -d)" ""

# Links. Data links (the overview's table rows to the lease and dead-letter dashboards of that
# queue) go to a dashboard here, set only variables it has, from fields the table has, and carry
# the datasource, cluster, job and time range along; panel links go to a runbook section.
for f in "${files[@]}"; do jq -r --arg d "$(basename "$f" .json)" '.templating.list[] | "\($d) \(.name)"' "$f"; done > "$T/vars"
jq -r '.. | objects | select(.id? == "links") | .value[] | .url' "${files[@]}" > "$T/data_links"
expect_cmd "data links found ($(wc -l < "$T/data_links"))" test "$(wc -l < "$T/data_links")" -ge 4
while read -r url; do
  target=$(sed -E 's#^/d/([a-z-]+)\?.*#\1#' <<<"$url")
  bad=""
  [ -f "$dashboards/$target.json" ] || bad="no dashboard $target"
  for v in $(grep -oE 'var-[a-z]+=' <<<"$url" | sed -E 's/var-(.*)=/\1/'); do
    grep -qx "$target $v" "$T/vars" || bad="$bad; $target has no variable $v"
  done
  for v in datasource cluster job; do
    grep -qF "\${$v:queryparam}" <<<"$url" || bad="$bad; $v not carried"
  done
  grep -qF '${__url_time_range}' <<<"$url" || bad="$bad; time range not carried"
  for field in $(grep -oE '__data\.fields\.[a-z]+' <<<"$url" | cut -d. -f3 | sort -u); do
    jq -e --arg f "$field" '[.panels[] | select(.title == "Queues, worst first") | .transformations[]
      | select(.id == "organize") | .options.renameByName | has($f)] | any' "$dashboards/qrel-overview.json" \
      >/dev/null || bad="$bad; no field $field"
  done
  if [ -z "$bad" ]; then ok "data link $url"; else not_ok "data link $url: ${bad#; }"; fi
done < "$T/data_links"
jq -r '.panels[] | .links[]? | .url' "${files[@]}" > "$T/panel_links"
expect_cmd "runbook links found ($(wc -l < "$T/panel_links"))" test "$(wc -l < "$T/panel_links")" -ge 15
while read -r url; do
  anchor=${url##*#}
  if [[ "$url" == https://github.com/qrel/qrel/blob/main/docs/alerts.md#* ]] &&
    grep -qiE "^### $anchor\$" "$QREL_SOURCE_DIR/docs/alerts.md"; then
    ok "runbook link $anchor"
  else
    not_ok "runbook link $url: no such section in docs/alerts.md"
  fi
done < "$T/panel_links"

# Every expr, with Grafana's variables replaced as Grafana would (an "All" selection is .*),
# must parse: promtool check rules on one recording rule per expr.
n=0
{
  echo "groups:"
  echo "  - name: dashboard-exprs"
  echo "    rules:"
  while IFS=$'\t' read -r _dash _title _ref expr; do
    n=$((n + 1))
    expr=${expr//\$__rate_interval/5m}
    expr=${expr//\$__interval/1m}
    expr=${expr//\$__range/1h}
    expr=${expr//\$source/.*}
    expr=${expr//\$queue/.*}
    expr=${expr//\$job/qrel}
    expr=${expr//\$cluster/.*}
    echo "      - record: dashboard_expr_$n"
    printf '        expr: %s\n' "$(jq -Rn --arg e "$expr" '$e')"
  done < "$T/exprs"
} > "$T/exprs.yml"
expect_cmd "panel queries found ($(wc -l < "$T/exprs"))" test "$(wc -l < "$T/exprs")" -ge 40
if grep -q '\$' "$T/exprs.yml"; then not_ok "a variable left unreplaced: $(grep -m1 '\$' "$T/exprs.yml")"; else ok "every variable replaced"; fi
if promtool check rules "$T/exprs.yml" > "$T/promtool.out" 2>&1; then
  ok "every panel query parses ($(grep -o '[0-9]* rules found' "$T/promtool.out"))"
else
  not_ok "panel queries that do not parse:"; cat "$T/promtool.out" >&2
fi
# And the check can fail: an unbalanced query is refused.
printf 'groups:\n  - name: g\n    rules:\n      - record: broken\n        expr: "sum(qrel_collector_up"\n' > "$T/broken.yml"
if promtool check rules "$T/broken.yml" > /dev/null 2>&1; then not_ok "promtool accepted a broken query"; else ok "promtool refuses a broken query"; fi

# Metric names: every qrel_* the dashboards, the alert rules and their tests name.
"$QREL" metrics | cut -f1 > "$T/catalogue"
expect_cmd "qrel metrics lists families" test "$(wc -l < "$T/catalogue")" -ge 25
# The rules' templates also read Prometheus external labels ($externalLabels.qrel_runbook_base):
# labels, not metric families, so they are left out.
grep -ohE '\$externalLabels\.qrel_[a-z0-9_]+' "$QREL_SOURCE_DIR"/alerts/*.yml | cut -d. -f2 | sort -u \
  > "$T/external_labels"
grep -ohE 'qrel_[a-z0-9_]+' "${files[@]}" "$QREL_SOURCE_DIR"/alerts/*.yml "$QREL_SOURCE_DIR"/alerts/tests/*.yml \
  | sort -u | grep -vxF -f "$T/external_labels" > "$T/used"
expect_cmd "metric names found in dashboards and alerts ($(wc -l < "$T/used"))" test "$(wc -l < "$T/used")" -ge 20
while read -r metric; do
  if grep -qx "$metric" "$T/catalogue"; then ok "$metric is exported"; else not_ok "$metric is named in dashboards or alerts but qrel metrics does not list it"; fi
  if grep -q "\`$metric\`" "$docs"; then ok "$metric is documented"; else not_ok "$metric is named in dashboards or alerts but not in docs/metrics.md"; fi
done < "$T/used"
finish
