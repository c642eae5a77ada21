#!/usr/bin/env bash
# The alert rules in alerts/ load in Prometheus (promtool check rules), behave as their tests say
# (promtool test rules), and every alert has a test case that fires it and one that stays silent,
# the labels and annotations the docs promise, and an absolute runbook_url (under the external label
# qrel_runbook_base when set, else qrel's docs) to its section in docs/alerts.md.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

alerts=$QREL_SOURCE_DIR/alerts
runbook=$QREL_SOURCE_DIR/docs/alerts.md
command -v promtool >/dev/null || { echo "promtool missing (Debian package prometheus; scripts/deps.sh)" >&2; exit 1; }
# The coverage checks read YAML: a python3 with PyYAML (Debian's python3-yaml).
PY=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import yaml' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "python3 with yaml missing (Debian package python3-yaml)" >&2; exit 1; }

# Every rule file (alerts/examples/ also holds an Alertmanager configuration: tests/artifacts/alertmanager.sh).
rule_files=("$alerts"/*.yml)
for f in "$alerts"/examples/*.yml; do
  [ "${f##*/}" = alertmanager.yml ] || rule_files+=("$f")
done
test_files=("$alerts"/tests/*.yml)
expect_cmd "rule files found (${#rule_files[@]})" test "${#rule_files[@]}" -ge 2
expect_cmd "test files found (${#test_files[@]})" test "${#test_files[@]}" -ge 5
# promtool_rules CMD FILE...: `promtool CMD rules FILE` passes for each FILE (else its report is
# shown).
promtool_rules() {
  local cmd=$1 f
  shift
  for f in "$@"; do
    if promtool "$cmd" rules "$f" > "$T/$cmd.out" 2>&1; then
      ok "promtool $cmd rules ${f#"$QREL_SOURCE_DIR"/}"
    else
      not_ok "promtool $cmd rules ${f#"$QREL_SOURCE_DIR"/}"; cat "$T/$cmd.out" >&2
    fi
  done
}
promtool_rules check "${rule_files[@]}"
# Test files name their rule files relative to themselves.
promtool_rules test "${test_files[@]}"

# promtool test rules really fails on a wrong expectation (else the passes above prove nothing):
# a DLQ with messages for 10 minutes, expected silent.
cp "$alerts/qrel-alerts.yml" "$T/"
cat > "$T/negative.yml" <<'YML'
rule_files: [qrel-alerts.yml]
tests:
  - interval: 1m
    input_series:
      - series: 'qrel_dead_letter_messages{source="s",kind="k",queue="q",dead_letter_queue="d"}'
        values: '1x10'
    alert_rule_test:
      - eval_time: 10m
        alertname: QrelDeadLetterQueueNotEmpty
        exp_alerts: []
YML
if promtool test rules "$T/negative.yml" > "$T/neg.out" 2>&1; then
  not_ok "promtool test rules passed a wrong expectation"
else
  ok "promtool test rules fails a wrong expectation"
fi
grep -q 'QrelDeadLetterQueueNotEmpty' "$T/neg.out" && ok "its report names the alert" || not_ok "promtool's report: $(head -3 "$T/neg.out")"

# The alert style of the monitoring mixins (tests/lint/alert_style.py): static summaries, literal
# severities, description, runbook and dashboard links. It fails a rule file in the old style.
if "$PY" "$QREL_SOURCE_DIR/tests/lint/alert_style.py" "${rule_files[@]}" >"$T/style.out" 2>&1; then
  ok "alert style (tests/lint/alert_style.py)"
else
  not_ok "alert style: $(cat "$T/style.out")"
fi
sed -e 's/summary: A dead-letter queue holds messages\./summary: "DLQ {{ $labels.queue }} is not empty"/' \
  -e '0,/severity: critical/s//severity: "{{ $labels.severity }}"/' "$alerts/qrel-alerts.yml" >"$T/style-bad.yml"
"$PY" "$QREL_SOURCE_DIR/tests/lint/alert_style.py" "$T/style-bad.yml" >"$T/style-bad.out" 2>&1 || true
expect_eq "the style lint fails a templated summary and severity" \
  "$(grep -c 'QrelDeadLetterQueueNotEmpty: \(the summary is templated\|the summary does not end\|severity is templated\)' "$T/style-bad.out")" 3

# One line per finding: "ok <what>" or "FAIL <what>".
# (Inside `if`: a failure is reported once, not with the whole script by the ERR trap.)
if ! "$PY" - "$runbook" "${rule_files[@]}" -- "${test_files[@]}" > "$T/coverage.out" 2> "$T/coverage.err" <<'PY'
import re, sys, yaml

args = sys.argv[1:]
runbook = args[0]
sep = args.index("--")
rule_files, test_files = args[1:sep], args[sep + 1:]

# The alert names other parts of qrel (docs, health check, e2e tests) rely on.
required = """QrelDeadLetterQueueNotEmpty QrelDeadLetterQueueGrowing QrelLeaseMarginLow
QrelLeaseMarginCritical QrelLeaseMarginTrendingDown QrelOldestMessageTooOld QrelConsumerLagHigh
QrelRedeliveriesHigh QrelStaleClaims QrelOutboxLagging QrelDedupWindowShorterThanRetryHorizon
QrelAuditFailed QrelAuditFailedCritical QrelCollectorDown QrelCollectorStale QrelExporterDown QrelClockSkew
QrelPendingScanTruncated QrelFreshnessBudgetBurnFast QrelFreshnessBudgetBurnSlow QrelSourceWatchesNothing
QrelBacklogWithoutConsumer QrelDeadLetterRetentionShort QrelDeadLetterBudgetBurnFast
QrelDeadLetterBudgetBurnSlow""".split()
severity = {"QrelDeadLetterQueueNotEmpty": "critical", "QrelDeadLetterQueueGrowing": "warning",
            "QrelLeaseMarginLow": "warning", "QrelLeaseMarginCritical": "critical",
            "QrelLeaseMarginTrendingDown": "warning",
            "QrelAuditFailed": "warning", "QrelAuditFailedCritical": "critical"}

def out(good, what):
    print(("ok " if good else "FAIL ") + what)

def seconds(d):
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+)(ms|s|m|h|d)", d or "0s"))

# GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens.
anchors = set()
for line in open(runbook, encoding="utf-8"):
    m = re.match(r"#+\s+(.*)", line)
    if m:
        anchors.add(re.sub(r"[^a-z0-9 _-]", "", m.group(1).strip().lower()).replace(" ", "-"))

alerts = {}
for f in rule_files:
    for group in yaml.safe_load(open(f))["groups"]:
        for rule in group["rules"]:
            if "alert" in rule:
                alerts.setdefault(rule["alert"], []).append(rule)

# runbook_url: one absolute link per alert, built from one place the user sets (the external
# label qrel_runbook_base), else qrel's own docs; an Alertmanager receiver cannot open a relative one.
default_runbook = "https://github.com/qrel/qrel/blob/main/docs/alerts.md"
runbook_template = ("{{ with $externalLabels.qrel_runbook_base }}{{ . }}{{ else }}"
                    + default_runbook + "{{ end }}#%s")

# dashboard_url: the Grafana that the external label qrel_grafana_url names, else Grafana's
# default address.
dashboard_base = "{{ with $externalLabels.qrel_grafana_url }}{{ . }}{{ else }}http://localhost:3000{{ end }}/d/"

fires, silent = set(), set()
expected_urls, relabelled = [], []
for f in test_files:
    for case in yaml.safe_load(open(f)).get("tests", []):
        base = (case.get("external_labels") or {}).get("qrel_runbook_base")
        for t in case.get("alert_rule_test") or []:
            (fires if t.get("exp_alerts") else silent).add(t["alertname"])
            for a in t.get("exp_alerts") or []:
                u = (a.get("exp_annotations") or {}).get("runbook_url")
                if u:
                    expected_urls.append(u)
                    if base:
                        relabelled.append((base, t["alertname"], u))
out(expected_urls and all(re.match(r"https://[^/]+/.*#[a-z]+$", u) for u in expected_urls),
    "every runbook_url the tests expect is absolute (%d)" % len(expected_urls))
out(all(u.startswith(default_runbook + "#") for u in expected_urls if u not in [r[2] for r in relabelled]),
    "without qrel_runbook_base the links go to qrel's docs")
out(relabelled and all(u == b + "#" + n.lower() for b, n, u in relabelled),
    "a test sets qrel_runbook_base and expects the link under it (%d)" % len(relabelled))

out(sorted(alerts) == sorted(required), "the alerts are exactly the documented %d" % len(required))
for name in sorted(alerts):
    for rule in alerts[name]:
        labels, ann = rule.get("labels", {}), rule.get("annotations", {})
        sev = labels.get("severity")
        out(sev == severity.get(name, sev) and sev in ("critical", "warning"),
            "%s severity %s" % (name, sev))
        for key in ("summary", "description", "runbook_url"):
            out(bool(ann.get(key)), "%s has a %s" % (name, key))
        out("$value" in ann.get("description", "") or "$labels" in ann.get("description", ""),
            "%s describes its figures ($value/$labels)" % name)
        dash = ann.get("dashboard_url", "")
        out(dash.startswith(dashboard_base) and re.search(r"/d/qrel-[a-z-]+\?var-", dash) is not None,
            "%s dashboard_url opens a qrel dashboard (under qrel_grafana_url when set) with its variables" % name)
        url = ann.get("runbook_url", "")
        out(url == runbook_template % name.lower() and name.lower() in anchors,
            "%s runbook_url is absolute (qrel_runbook_base or qrel's docs) and its section is in docs/alerts.md" % name)
    out(name in fires, "%s has a test case that fires it" % name)
    out(name in silent, "%s has a test case where it stays silent" % name)
crit = alerts.get("QrelLeaseMarginCritical", [{}])[0]
out(seconds(crit.get("for")) <= 120, "QrelLeaseMarginCritical waits at most 2m (for: %s)" % crit.get("for"))
low = alerts.get("QrelLeaseMarginLow", [{}])[0]
out(seconds(low.get("for")) == 600, "QrelLeaseMarginLow waits 10m (for: %s)" % low.get("for"))
PY
then
  not_ok "coverage checks: $(tail -1 "$T/coverage.err")"
fi
while read -r verdict what; do
  if [ "$verdict" = ok ]; then ok "$what"; else not_ok "$what"; fi
done < "$T/coverage.out"
expect_cmd "coverage checks ran" test "$(wc -l < "$T/coverage.out")" -ge 100
finish
