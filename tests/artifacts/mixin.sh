#!/usr/bin/env bash
# The monitoring mixin (mixin/): rendered with its defaults by scripts/gen-mixin.sh it gives exactly
# the committed alerts/qrel-alerts.yml, alerts/qrel-rules.yml, dashboards/*.json and
# deploy/kubernetes/grafana/dashboards.yaml (a file edited by hand, or a mixin
# edit not rendered, fails here); rendered with another _config, the selector and cluster label
# reach every rule, which still passes promtool's checks and the rule tests, and the dashboards take
# the new uids, tag, cluster label and links.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

command -v jsonnet >/dev/null || { echo "jsonnet missing (Debian package jsonnet; scripts/deps.sh)" >&2; exit 1; }
gen=$QREL_SOURCE_DIR/scripts/gen-mixin.sh

# ---- the defaults render the committed files ---------------------------------------------------
expect_cmd "the mixin renders with its defaults" bash "$gen" --out "$T/default"
drift() { # drift DIR: the differences between DIR's rendering and the committed files
  diff "$QREL_SOURCE_DIR/alerts/qrel-alerts.yml" "$1/alerts/qrel-alerts.yml" &&
    diff "$QREL_SOURCE_DIR/alerts/qrel-rules.yml" "$1/alerts/qrel-rules.yml" &&
    diff -r "$QREL_SOURCE_DIR/dashboards" "$1/dashboards" &&
    diff "$QREL_SOURCE_DIR/deploy/kubernetes/grafana/dashboards.yaml" "$1/deploy/kubernetes/grafana/dashboards.yaml"
}
if drift "$T/default" >"$T/drift.out" 2>&1; then
  ok "alerts/qrel-alerts.yml, alerts/qrel-rules.yml, dashboards/*.json and their ConfigMaps are what the mixin renders"
else
  not_ok "the committed files differ from the mixin's rendering (run scripts/gen-mixin.sh): $(head -20 "$T/drift.out")"
fi
# The check can fail: a committed file edited by hand differs.
cp -r "$T/default" "$T/edited"
sed -i 's/for: 5m/for: 6m/' "$T/edited/alerts/qrel-alerts.yml"
expect_cmd "the edit changed the copy" grep -q 'for: 6m' "$T/edited/alerts/qrel-alerts.yml"
if drift "$T/edited" >/dev/null 2>&1; then not_ok "a hand edit went unnoticed"; else ok "a hand edit of the rules is a drift"; fi

# ---- another _config -----------------------------------------------------------------------------
# A selector that the rule tests' series also match (they carry no job label), and a cluster label
# they lack: the rules must behave exactly as the tests say, with the selector in every selector.
cat >"$T/selector.jsonnet" <<'EOF'
{ qrelSelector: 'job!="not-qrel"', clusterLabel: 'k8s_cluster' }
EOF
expect_cmd "the mixin renders with qrelSelector and clusterLabel set" \
  bash "$gen" --out "$T/selector" --config "$T/selector.jsonnet"
rules=$T/selector/alerts/qrel-alerts.yml
recorded=$T/selector/alerts/qrel-rules.yml
expect_cmd "promtool check rules on that rendering" promtool check rules "$rules" "$recorded"
mkdir -p "$T/selector/alerts/tests"
cp "$QREL_SOURCE_DIR"/alerts/tests/*.yml "$T/selector/alerts/tests/"
mkdir -p "$T/selector/alerts/examples" && cp "$QREL_SOURCE_DIR"/alerts/examples/*.yml "$T/selector/alerts/examples/"
if (cd "$T/selector/alerts/tests" && promtool test rules ./*.yml) >"$T/selector-tests.out" 2>&1; then
  ok "the rule tests pass on that rendering"
else
  not_ok "the rule tests on the rendering with a selector: $(grep -A8 FAILED "$T/selector-tests.out" | head -20)"
fi
# Every selector of a qrel_* series in every expr of both files (the recording rules too)
# carries the matcher; bare names are none.
"$QREL_PYTHON" - "$rules" "$recorded" >"$T/selectors.out" <<'PY'
import re, sys, yaml
exprs = [r["expr"] for f in sys.argv[1:] for g in yaml.safe_load(open(f))["groups"] for r in g["rules"]]
names = [m for e in exprs for m in re.findall(r"\bqrel_[a-z0-9_]+(?:\{[^}]*\})?", e)]
print(len(names), len([n for n in names if 'job!="not-qrel"' not in n]))
print(sum(e.count("on(k8s_cluster, ") + e.count("by (k8s_cluster, ") for e in exprs), sum(e.count("cluster,") - e.count("k8s_cluster,") for e in exprs))
PY
read -r selectors without <"$T/selectors.out"
expect_cmd "qrel series selected in the rules ($selectors)" test "$selectors" -ge 20
expect_eq "selectors of qrel series without qrelSelector" "$without" 0
read -r joins plain <<<"$(sed -n 2p "$T/selectors.out")"
expect_cmd "joins and sums by the cluster label ($joins)" test "$joins" -ge 5
expect_eq "joins by the default cluster label left" "$plain" 0
expect_cmd "QrelExporterDown still watches exporterSelector" grep -qF 'up{job="qrel"} == 0' "$rules"

# Dashboards: uids, tag, the cluster variable shown and read from another label, the links.
cat >"$T/dash.jsonnet" <<'EOF'
{ clusterLabel: 'k8s_cluster', showMultiCluster: true, dashboardTag: 'queues',
  dashboardUIDs: { overview: 'q-ov', lease: 'q-lease', deadLetters: 'q-dlq', exporter: 'q-exp' } }
EOF
expect_cmd "the mixin renders with other uids" bash "$gen" --out "$T/dash" --config "$T/dash.jsonnet"
expect_eq "dashboard files named by the new uids" "$(cd "$T/dash/dashboards" && echo *.json)" "q-dlq.json q-exp.json q-lease.json q-ov.json"
ov=$T/dash/dashboards/q-ov.json
expect_eq "uid" "$(jq -r .uid "$ov")" q-ov
expect_eq "tags lead with the shared tag" "$(jq -r '.tags | join(",")' "$ov")" "queues,overview"
expect_eq "the dashboards menu follows the tag" "$(jq -r '.links[0].tags | join(",")' "$ov")" queues
expect_eq "cluster variable shown, reading k8s_cluster" \
  "$(jq -r '.templating.list[] | select(.name == "cluster") | "\(.hide) \(.query)"' "$ov")" "0 label_values(qrel_build_info, k8s_cluster)"
expect_eq "selectors use k8s_cluster" "$(jq -r '[.panels[].targets[]?.expr | select(test("k8s_cluster=~\"\\$cluster\""))] | length' "$ov")" \
  "$(jq -r '[.panels[].targets[]?.expr] | length' "$ov")"
expect_eq "data links go to the new uids" \
  "$(jq -r '[.. | objects | select(.id? == "links") | .value[].url | capture("^/d/(?<u>[^?]+)").u] | unique | join(" ")' "$ov")" "q-dlq q-lease"
expect_cmd "alerts link to the new uids" grep -q '/d/q-lease?var-source=' "$T/dash/alerts/qrel-alerts.yml"
finish
