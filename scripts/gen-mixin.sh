#!/usr/bin/env bash
# Renders the mixin (mixin/mixin.libsonnet) into the files qrel ships: alerts/qrel-alerts.yml (the
# alerts that read qrel's series), alerts/qrel-rules.yml (the recording rules, and the alerts that
# read them: a file loaded alone never holds an alert whose input is missing), dashboards/*.json, and
# the dashboards as ConfigMaps in deploy/kubernetes/grafana/dashboards.yaml. Run it after editing mixin/; tests/artifacts/mixin.sh fails when the committed
# files differ from what this writes.
#   scripts/gen-mixin.sh [--out DIR] [--config FILE]
# --out DIR: write under DIR (alerts/, dashboards/) instead of the repository.
# --config FILE: a jsonnet object merged into _config (e.g. { qrelSelector: 'job="queues"' }).
# Needs jsonnet and python3 with PyYAML (Debian's jsonnet and python3-yaml; scripts/deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root
config='{}'
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --config) config=$(cat "$2"); shift 2 ;;
    *) echo "gen-mixin: unknown argument $1 (--out DIR, --config FILE)" >&2; exit 2 ;;
  esac
done
command -v jsonnet >/dev/null || { echo "gen-mixin: jsonnet missing (Debian package jsonnet; scripts/deps.sh)" >&2; exit 1; }
mkdir -p "$out/alerts" "$out/dashboards" "$out/deploy/kubernetes/grafana"
mixin="(import 'mixin.libsonnet') + { _config+:: $config }"
header='# {file}: generated from mixin/ by scripts/gen-mixin.sh. Edit mixin/alerts.libsonnet,
# mixin/slo.libsonnet and mixin/flow.libsonnet (the rules, with why each is as it is) or mixin/config.libsonnet
# (thresholds, durations, selectors, objectives), not this file.
# Each alert has a runbook section in docs/alerts.md; runbook_url links to it, under the external
# label qrel_runbook_base when your prometheus.yml sets one, and dashboard_url to the qrel dashboard
# that shows it (docs/alerts.md#dashboard-links). Tests: alerts/tests/*.yml (promtool test rules).
'
# jsonnet evaluates the mixin to JSON (a second); Python writes the files: jsonnet 0.18's own
# std.manifestYamlDoc and std.manifestJsonEx took 8 and 2 CPU seconds a file here.
jsonnet -J "$root/mixin" -e "local m = $mixin; { alerts: m.prometheusAlerts, rules: m.prometheusRules, dashboards: m.grafanaDashboards }" \
  >"$out/.mixin.json"
python3 - "$out" "$header" <<'PY'
import json, os, sys
import yaml

out, header = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(out, ".mixin.json"), encoding="utf-8"))

class Dumper(yaml.SafeDumper):
    pass

def text(dumper, s):
    # An expression over several lines stays a block, as written in the mixin.
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)

Dumper.add_representer(str, text)
order = ["alert", "record", "expr", "for", "labels", "annotations"]
def tidy(group):
    rules = []
    for r in group["rules"]:
        r = {k: r[k] for k in sorted(r, key=lambda k: (order.index(k) if k in order else 99, k))}
        if "annotations" in r:
            a = r["annotations"]
            first = {k: a[k] for k in ["summary", "description", "runbook_url", "dashboard_url"] if k in a}
            r["annotations"] = {**first, **{k: v for k, v in a.items() if k not in first}}
        rules.append(r)
    return {"name": group["name"], "rules": rules}

def reads_recorded(group):
    return any("slo:sli_error" in r.get("expr", "") for r in group["rules"])

files = {
    "qrel-alerts.yml": [tidy(g) for g in m["alerts"]["groups"] if not reads_recorded(g)],
    "qrel-rules.yml": [tidy(g) for g in m["rules"]["groups"]]
                      + [tidy(g) for g in m["alerts"]["groups"] if reads_recorded(g)],
}
for name, groups in files.items():
    with open(os.path.join(out, "alerts", name), "w", encoding="utf-8") as f:
        f.write(header.replace("{file}", name))
        yaml.dump({"groups": groups}, f, Dumper=Dumper, sort_keys=False, width=1 << 16, allow_unicode=True, indent=2)
for name, d in m["dashboards"].items():
    with open(os.path.join(out, "dashboards", name), "w", encoding="utf-8") as f:
        json.dump(d, f, indent=2, ensure_ascii=False)
        f.write("\n")

# The dashboards as ConfigMaps for Grafana's dashboard sidecar on Kubernetes (the label
# grafana_dashboard, the folder from the annotation), each JSON on one line: kustomize 2 reads no
# file outside its folder, so deploy/kubernetes/grafana/ carries them itself.
k8s = os.path.join(out, "deploy", "kubernetes", "grafana")
os.makedirs(k8s, exist_ok=True)
maps = []
for name in sorted(m["dashboards"]):
    d = m["dashboards"][name]
    maps.append({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "qrel-dashboard-" + d["uid"],
            "labels": {"app.kubernetes.io/name": "qrel", "grafana_dashboard": "1"},
            "annotations": {"grafana_folder": "qrel"},
        },
        "data": {name: json.dumps(d, ensure_ascii=False, separators=(",", ":"))},
    })
with open(os.path.join(k8s, "dashboards.yaml"), "w", encoding="utf-8") as f:
    f.write("# Generated by scripts/gen-mixin.sh from mixin/ (the dashboards of dashboards/): do not edit.\n")
    yaml.dump_all(maps, f, Dumper=Dumper, sort_keys=False, width=1 << 30, allow_unicode=True,
                  explicit_start=False, default_flow_style=False)
os.remove(os.path.join(out, ".mixin.json"))
PY
echo "gen-mixin: wrote $out/alerts/qrel-alerts.yml, $out/alerts/qrel-rules.yml, $(cd "$out/dashboards" && echo *.json | wc -w) dashboards in $out/dashboards and their ConfigMaps in $out/deploy/kubernetes/grafana/dashboards.yaml"
