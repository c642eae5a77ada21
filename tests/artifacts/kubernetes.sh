#!/usr/bin/env bash
# deploy/kubernetes/, offline: the PrometheusRule is what scripts/gen-prometheusrule.py makes of
# alerts/qrel-alerts.yml (a drifted copy is caught); yamllint passes (deploy/.yamllint, warnings
# fail); `kubectl kustomize` renders the base, the sd/ and probe/ variants and the example overlay
# (with its config reloader, and as the README installs it); every rendered object passes its
# Kubernetes or Prometheus Operator schema (npm kubernetes-models and
# @kubernetes-models/prometheus-operator, pinned in tests/peers/kubernetes) and every pod the
# hardening docs/kubernetes.md promises; the rules taken
# out of the rendered PrometheusRule pass `promtool check rules` and alerts/tests/*.yml. And each
# check can fail: a drifted rule file, a lint error, a Deployment without its selector, a
# privileged container, rules whose threshold moved.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

deploy=$QREL_SOURCE_DIR/deploy
rule=$deploy/kubernetes/base/prometheusrule.yaml
for tool in kubectl yamllint promtool jq; do
  command -v "$tool" >/dev/null || { echo "$tool missing (scripts/deps.sh installs it)" >&2; exit 1; }
done
"$QREL_PYTHON" -c 'import yaml' 2>/dev/null || { echo "$QREL_PYTHON without yaml (Debian package python3-yaml)" >&2; exit 1; }
npm_peers_install kubernetes "kubernetes-models, @kubernetes-models/prometheus-operator and Node 22, about 30 s" --prefer-offline

# ---- the PrometheusRule is generated -----------------------------------------------------------
gen() { "$QREL_PYTHON" "$QREL_SOURCE_DIR/scripts/gen-prometheusrule.py" "$@"; }
gen --out "$T/prometheusrule.yaml" "$QREL_SOURCE_DIR/alerts/qrel-alerts.yml" "$QREL_SOURCE_DIR/alerts/qrel-rules.yml"
if diff -u "$rule" "$T/prometheusrule.yaml" >"$T/drift.diff"; then
  ok "deploy/kubernetes/base/prometheusrule.yaml is what scripts/gen-prometheusrule.py makes of the alerts"
else
  not_ok "prometheusrule.yaml drifted from alerts/qrel-alerts.yml (run scripts/gen-prometheusrule.py): $(head -20 "$T/drift.diff")"
fi
# A rule file changed without regenerating: the diff finds it and names the change.
sed '0,/for: 5m/s//for: 7m/' "$QREL_SOURCE_DIR/alerts/qrel-alerts.yml" >"$T/drifted-alerts.yml"
gen --out "$T/drifted.yaml" "$T/drifted-alerts.yml" "$QREL_SOURCE_DIR/alerts/qrel-rules.yml"
if diff -u "$rule" "$T/drifted.yaml" >"$T/drifted.diff"; then
  not_ok "a drifted rule file went unnoticed"
else
  expect_line "a drifted rule file is caught, the diff naming the change" '^+ *for: 7m$' "$T/drifted.diff"
fi

# ---- yamllint ----------------------------------------------------------------------------------
if (cd "$QREL_SOURCE_DIR" && yamllint -s -c deploy/.yamllint deploy) >"$T/yamllint.out" 2>&1; then
  ok "yamllint -s passes deploy/"
else
  not_ok "yamllint: $(cat "$T/yamllint.out")"
fi
printf 'apiVersion: v1\nkind: Service\nmetadata:\n  name: bad \nspec:\n   ports: []\n' >"$T/bad-lint.yaml"
yamllint -s -c "$deploy/.yamllint" "$T/bad-lint.yaml" >"$T/bad-lint.out" 2>&1 || true
expect_line "yamllint refuses a wrong indentation" '(indentation)' "$T/bad-lint.out"
expect_line "yamllint refuses trailing spaces" '(trailing-spaces)' "$T/bad-lint.out"

# ---- kubectl kustomize -------------------------------------------------------------------------
# A copy, so that the example overlay gets the secret file a user keeps out of version control,
# and its commented config reloader patch can be switched on.
cp -r "$deploy" "$T/deploy"
k8s=$T/deploy/kubernetes
echo 'not-a-real-password' >"$k8s/examples/overlay/redis.pass"
sed -i 's/^  # - config-reloader.yaml$/  - config-reloader.yaml/' "$k8s/examples/overlay/kustomization.yaml"
expect_cmd "the example overlay's config reloader is switched on in the copy" \
  grep -qx '  - config-reloader.yaml' "$k8s/examples/overlay/kustomization.yaml"
mkdir "$T/out"
# render NAME DIR: kubectl kustomize DIR into $T/out/NAME.yaml, and as a JSON array NAME.json.
render() {
  if kubectl kustomize "$2" >"$T/out/$1.yaml" 2>"$T/out/$1.err"; then
    "$QREL_PYTHON" -c 'import json, sys, yaml
json.dump([d for d in yaml.safe_load_all(open(sys.argv[1])) if d], sys.stdout)' "$T/out/$1.yaml" >"$T/out/$1.json"
    ok "kubectl kustomize renders $1 ($(jq length "$T/out/$1.json") objects)"
  else
    not_ok "kubectl kustomize $1: $(grep -v Warning "$T/out/$1.err" | head -5)"
    echo '[]' >"$T/out/$1.json"
  fi
}
render default "$k8s"
render base "$k8s/base"
render sd "$k8s/sd"
render probe "$k8s/probe"
render overlay "$k8s/examples/overlay"
render grafana "$k8s/grafana"
# The README's install steps: the example overlay copied out of the tree, pointed at the base.
cp -r "$deploy/kubernetes/examples/overlay" "$T/my-qrel"
echo 'not-a-real-password' >"$T/my-qrel/redis.pass"
sed -i 's#\.\./\.\./base#../deploy/kubernetes/base#' "$T/my-qrel/kustomization.yaml"
render readme "$T/my-qrel"

# kinds NAME: the kinds NAME renders, sorted, on one line.
kinds() { jq -r '[.[].kind] | sort | join(" ")' "$T/out/$1.json"; }
expect_eq "the base's objects" "$(kinds base)" \
  "ConfigMap Deployment Namespace PrometheusRule PrometheusRule Secret Service ServiceMonitor"
expect_cmd "deploy/kubernetes applies the base" cmp -s <(jq -S . "$T/out/default.json") <(jq -S . "$T/out/base.json")
expect_eq "sd/ adds a ScrapeConfig" "$(kinds sd)" \
  "ConfigMap Deployment Namespace PrometheusRule PrometheusRule ScrapeConfig Secret Service ServiceMonitor"
expect_eq "probe/ adds a Probe" "$(kinds probe)" \
  "ConfigMap Deployment Namespace Probe PrometheusRule PrometheusRule Secret Service ServiceMonitor"
# q NAME FILTER: jq FILTER over NAME's objects, raw.
q() { jq -r "$2" "$T/out/$1.json"; }
dep='.[] | select(.kind == "Deployment") | .spec.template.spec'
expect_eq "the image, from the images: entry" "$(q base "$dep | .containers[0].image")" qrel/qrel_exporter:0.1.0
expect_eq "the config volume is the generated ConfigMap" \
  "$(q base "$dep | .volumes[] | select(.name == \"config\") | .configMap.name")" \
  "$(q base '.[] | select(.kind == "ConfigMap") | .metadata.name')"
expect_eq "the secrets volume is the generated Secret, mode 0440" \
  "$(q base "$dep | .volumes[] | select(.name == \"secrets\") | \"\(.secret.secretName) \(.secret.defaultMode)\"")" \
  "$(q base '.[] | select(.kind == "Secret") | .metadata.name') 288"
expect_eq "the exporter's command and flags" "$(q base "$dep | .containers[0] | .command + .args | join(\" \")")" \
  "/usr/bin/qrel_exporter --config.file=/etc/qrel/qrel.yml --web.listen-address=:19318 --web.enable-lifecycle --web.advertise-address=qrel-exporter.\$(POD_NAMESPACE).svc:19318 --log.format=json"
expect_eq "liveness and readiness probes" \
  "$(q base "$dep | .containers[0] | \"\(.livenessProbe.httpGet.path) \(.readinessProbe.httpGet.path)\"")" "/-/healthy /-/ready"
expect_eq "the Service's port" "$(q base '.[] | select(.kind == "Service") | .spec.ports[0].port')" 19318
expect_eq "the ServiceMonitor scrapes /metrics of the Service, job from its label qrel" \
  "$(q base '.[] | select(.kind == "ServiceMonitor") | .spec | "\(.endpoints[0].port) \(.endpoints[0].path) \(.jobLabel)"')" \
  "http-metrics /metrics app.kubernetes.io/name"
expect_eq "every object in the namespace qrel" \
  "$(q base '[.[] | select(.kind != "Namespace") | .metadata.namespace] | unique | join(" ")')" qrel
expect_eq "the ScrapeConfig reads /sd of the Service, job qrel" \
  "$(q sd '.[] | select(.kind == "ScrapeConfig") | .spec | "\(.httpSDConfigs[0].url) \(.jobName) \(.honorLabels)"')" \
  "http://qrel-exporter.qrel.svc:19318/sd qrel true"
expect_eq "the Probe asks /probe of the Service, job qrel" \
  "$(q probe '.[] | select(.kind == "Probe") | .spec | "\(.prober.url)\(.prober.path) \(.jobName)"')" \
  "qrel-exporter.qrel.svc:19318/probe qrel"
for v in sd probe; do
  expect_eq "$v/: /metrics keeps only the exporter's own series" \
    "$(q "$v" '.[] | select(.kind == "ServiceMonitor") | .spec.endpoints[0].metricRelabelings[0] | "\(.action) \(.regex)"')" \
    "keep qrel_build_info|qrel_config_.*|qrel_http_requests_total|process_.*"
done
expect_eq "the README's overlay renders the base with the user's config and secret" "$(kinds readme)" "$(kinds base)"
# grafana/: one ConfigMap per dashboard for Grafana's sidecar, each holding dashboards/<uid>.json.
expect_eq "grafana/: a ConfigMap per dashboard, labelled for the sidecar, folder qrel" \
  "$(q grafana '[.[] | "\(.kind) \(.metadata.labels.grafana_dashboard) \(.metadata.annotations.grafana_folder) \(.metadata.namespace)"] | unique | join(",")')" \
  "ConfigMap 1 qrel qrel"
for f in "$QREL_SOURCE_DIR"/dashboards/*.json; do
  name=$(basename "$f")
  if cmp -s <(jq -S . "$f") <(q grafana ".[] | .data[\"$name\"] // empty" | jq -S .); then
    ok "grafana/ holds dashboards/$name as it is"
  else
    not_ok "grafana/'s ConfigMap for $name differs from dashboards/$name (run scripts/gen-mixin.sh)"
  fi
done
expect_eq "the overlay's Secret holds its file" \
  "$(q overlay '.[] | select(.kind == "Secret") | .data | keys | join(" ")')" redis.pass
expect_eq "the overlay's config names the secret by its mounted path" \
  "$(q overlay '.[] | select(.kind == "ConfigMap") | .data["qrel.yml"]' | grep -c 'password_file: /etc/qrel-secrets/redis.pass')" 1
expect_eq "the overlay labels what its Prometheus selects" \
  "$(q overlay '[.[] | select(.metadata.labels.release == "kube-prometheus-stack") | .kind] | sort | join(" ")')" \
  "PrometheusRule PrometheusRule ServiceMonitor"
expect_eq "the overlay's pod runs the exporter and the config reloader" \
  "$(q overlay "$dep | [.containers[].name] | join(\" \")")" "config-reloader qrel-exporter"
if [ -x "$EXPORTER" ]; then
  q base '.[] | select(.kind == "ConfigMap") | .data["qrel.yml"]' >"$T/qrel.yml"
  expect_exit "qrel_exporter --config.check accepts the base's config" 0 "$T/check.out" \
    "$EXPORTER" --config.check --config.file="$T/qrel.yml"
  # The example's, with its secret where the pod would mount it.
  echo 'not-a-real-password' >"$T/redis.pass"
  q overlay '.[] | select(.kind == "ConfigMap") | .data["qrel.yml"]' |
    sed "s#/etc/qrel-secrets/redis.pass#$T/redis.pass#" >"$T/overlay-qrel.yml"
  expect_exit "qrel_exporter --config.check accepts the example overlay's config" 0 "$T/check-overlay.out" \
    "$EXPORTER" --config.check --config.file="$T/overlay-qrel.yml"
fi

# ---- the schemas and the hardening -------------------------------------------------------------
# Each check can refuse: a Deployment without its selector (the schema), a privileged container
# and one that may gain privileges (the hardening), a ServiceMonitor whose port is a number (its
# CRD's schema). Checked in the same run of Node as the rendered files (bad.json).
jq '[(.[] | select(.kind == "Deployment") | del(.spec.selector) | .metadata.name = "no-selector"),
     (.[] | select(.kind == "Deployment") | .metadata.name = "privileged"
        | .spec.template.spec.containers[0].securityContext |= (.privileged = true | .allowPrivilegeEscalation = true)),
     (.[] | select(.kind == "ServiceMonitor") | .spec.endpoints[0].port = 19318)]' \
  "$T/out/base.json" >"$T/out/bad.json"
rendered=(base.json sd.json probe.json overlay.json readme.json grafana.json)
(cd "$T/out" && "$NODE" "$PEERS/validate.mjs" "${rendered[@]}" bad.json) >"$T/validate.out" 2>&1 || true
grep -v ' bad\.json ' "$T/validate.out" >"$T/good.out" || true
grep ' bad\.json ' "$T/validate.out" >"$T/bad.out" || true
expect_eq "objects checked" "$(grep -c '^ok \|^FAIL ' "$T/good.out")" \
  "$(cd "$T/out" && jq -s 'map(length) | add' "${rendered[@]}")"
while read -r verdict what; do
  if [ "$verdict" = ok ]; then ok "schema and hardening: $what"; else not_ok "$what"; fi
done < <(grep '^ok \|^FAIL ' "$T/good.out" || echo "FAIL validate.mjs: $(tail -3 "$T/validate.out")")
expect_line "a Deployment without its selector is refused by the schema" \
  'FAIL bad.json Deployment/no-selector: schema: .*required property .\?selector' "$T/bad.out"
expect_line "a privileged container is refused" \
  'FAIL bad.json Deployment/privileged: hardening: .*container qrel-exporter: privileged' "$T/bad.out"
expect_line "a container that may gain privileges is refused" \
  'FAIL bad.json Deployment/privileged: .*allowPrivilegeEscalation is not false' "$T/bad.out"
expect_line "a ServiceMonitor port that is not a name is refused by its CRD's schema" \
  'FAIL bad.json ServiceMonitor/qrel-exporter: schema: .*port must be string' "$T/bad.out"

# ---- the rules out of the rendered PrometheusRule ----------------------------------------------
# Laid out as alerts/ is, so that alerts/tests/*.yml find them as ../qrel-alerts.yml (and
# thresholds.yml its example rule file) without an edit.
mkdir -p "$T/alerts/tests" "$T/alerts/examples"
cp "$QREL_SOURCE_DIR"/alerts/tests/*.yml "$T/alerts/tests/"
cp "$QREL_SOURCE_DIR/alerts/examples/qrel-thresholds.yml" "$T/alerts/examples/"
for f in qrel-alerts qrel-rules; do
  q base "[.[] | select(.kind == \"PrometheusRule\" and .metadata.name == \"$f\")][0] | {groups: .spec.groups}" \
    >"$T/alerts/$f.yml"
  expect_cmd "the rendered PrometheusRule $f holds alerts/$f.yml" "$QREL_PYTHON" -c 'import json, sys, yaml
sys.exit(json.load(open(sys.argv[1])) != yaml.safe_load(open(sys.argv[2])))' \
    "$T/alerts/$f.yml" "$QREL_SOURCE_DIR/alerts/$f.yml"
  expect_exit "promtool check rules on the rendered $f" 0 "$T/promtool-check.out" \
    promtool check rules "$T/alerts/$f.yml"
done
tests=("$T"/alerts/tests/*.yml)
expect_exit "promtool test rules: alerts/tests/*.yml (${#tests[@]} files) on the rendered rules" 0 \
  "$T/promtool-test.out" promtool test rules "${tests[@]}"
# The rule tests read the extracted file: QrelDeadLetterQueueNotEmpty waiting 50m instead of 5m
# fails dead_letters.yml.
sed -i '0,/"for": "5m"/s//"for": "50m"/' "$T/alerts/qrel-alerts.yml"
expect_exit "promtool test rules fails rules whose for: moved" 1 "$T/promtool-moved.out" \
  promtool test rules "$T/alerts/tests/dead_letters.yml"
finish
