// The knobs of the qrel mixin. Override any of them in your own jsonnet:
//   (import 'qrel/mixin.libsonnet') + { _config+:: { qrelSelector: 'job="queues"' } }
// The defaults render exactly the files the repository ships (alerts/qrel-alerts.yml and
// dashboards/*.json), which tests/artifacts/mixin.sh checks.
{
  _config+:: {
    // Matchers added to every selector of qrel's own series in the alerts, e.g.
    // 'job="qrel", namespace="monitoring"'. Empty: every qrel series Prometheus has.
    qrelSelector: '',
    // The scrape targets QrelExporterDown watches (their `up`): the job that scrapes qrel.
    exporterSelector: 'job="qrel"',
    // The label that tells clusters apart where one Prometheus (or Thanos) sees several: added to
    // the alerts' aggregations and joins, and the dashboards' `cluster` variable reads it.
    clusterLabel: 'cluster',
    // Show the dashboards' cluster variable (hidden by default: most setups have no such label,
    // and its "All" matches a missing label anyway).
    showMultiCluster: false,

    // Links. %s is the alert's name in lower case (the anchor of its runbook section). The default
    // follows the external label qrel_runbook_base when Prometheus sets one (docs/alerts.md).
    runbookURLPattern: '{{ with $externalLabels.qrel_runbook_base }}{{ . }}{{ else }}https://github.com/qrel/qrel/blob/main/docs/alerts.md{{ end }}#%s',
    // Grafana's address for the alerts' dashboard_url (a Prometheus template, or a plain URL).
    grafanaURL: '{{ with $externalLabels.qrel_grafana_url }}{{ . }}{{ else }}http://localhost:3000{{ end }}',

    // Thresholds (the alerts' defaults; per-queue thresholds are recording rules of yours,
    // alerts/examples/qrel-thresholds.yml).
    oldestMessageAgeSeconds: 900,
    consumerLagSeconds: 300,
    redeliveriesPerSecond: 0.05,
    redeliveredPendingMessages: 10,
    outboxOldestPendingSeconds: 300,
    collectorStaleSeconds: 900,
    leaseMarginLow: 2,

    // How long each condition must hold before the alert fires.
    'for': {
      deadLetterQueueNotEmpty: '5m',
      deadLetterQueueGrowing: '15m',
      deadLetterRetentionShort: '15m',
      leaseMarginLow: '10m',
      leaseMarginCritical: '2m',
      leaseMarginTrendingDown: '10m',
      oldestMessageTooOld: '5m',
      consumerLagHigh: '5m',
      backlogWithoutConsumer: '10m',
      redeliveriesHigh: '15m',
      staleClaims: '15m',
      dedupWindowShorterThanRetryHorizon: '15m',
      clockSkew: '10m',
      outboxLagging: '5m',
      auditFailed: '5m',
      collectorDown: '5m',
      collectorStale: '5m',
      pendingScanTruncated: '15m',
      sourceWatchesNothing: '15m',
      exporterDown: '5m',
      freshnessBudgetBurnFast: '2m',
      freshnessBudgetBurnSlow: '15m',
      deadLetterBudgetBurnFast: '2m',
      deadLetterBudgetBurnSlow: '15m',
    },

    // The freshness SLO (slo.libsonnet): the fraction of time each queue's oldest message should
    // be younger than its threshold, over 30 days.
    freshnessObjective: 0.99,
    // The dead-letter SLO (slo.libsonnet): the fraction of the messages each queue finishes
    // (consumed or dead-lettered) that should not be dead-lettered, over 30 days.
    deadLetterObjective: 0.999,

    // Severities, by alert name, where you want another than the alert's own (critical pages,
    // warning opens a ticket: alerts/examples/alertmanager.yml), e.g. { QrelLeaseMarginLow: 'critical' }.
    severities: {},

    // Dashboards: their uids (links between them and the alerts' dashboard_url use these) and
    // the tag they share (the "qrel dashboards" menu lists the dashboards with it).
    dashboardUIDs: {
      overview: 'qrel-overview',
      lease: 'qrel-lease',
      deadLetters: 'qrel-dead-letters',
      exporter: 'qrel-exporter',
    },
    dashboardTag: 'qrel',
  },
}
