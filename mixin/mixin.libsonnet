// The qrel monitoring mixin: prometheusAlerts, prometheusRules (the SLOs' and the flow's recording rules), grafanaDashboards and
// the _config they read (config.libsonnet). scripts/gen-mixin.sh renders alerts/qrel-alerts.yml
// and dashboards/*.json from it; docs/mixin.md shows how to use it with your own _config.
(import 'config.libsonnet') +
(import 'alerts.libsonnet') +
(import 'dashboards.libsonnet') +
(import 'slo.libsonnet') +
(import 'flow.libsonnet')
