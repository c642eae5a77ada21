// qrel's alert rules. Each alert has a runbook section in docs/alerts.md (what it means, what to
// check, what to change); runbook_url links to it (runbookURLPattern), dashboard_url to the qrel
// dashboard that shows it with the alert's source and queue set. Thresholds marked "override"
// can be set per queue from your own rule file (docs/alerts.md#per-queue-thresholds).
// Style (tests/lint/alert_style.py): a static summary ending with a period, the details in the
// templated description, a literal severity. Tests: alerts/tests/*.yml (promtool test rules).
{
  local c = $._config,

  // sel(metric, matchers): the metric with qrelSelector and the given matchers, e.g.
  // sel('qrel_claims', 'state="stale"') is qrel_claims{state="stale"} by default.
  local sel(metric, matchers='') =
    local all = std.filter(function(m) m != '', [c.qrelSelector, matchers]);
    if std.length(all) == 0 then metric else metric + '{' + std.join(', ', all) + '}',
  // by(labels): a label list for on() and by(), with the cluster label first where one is set,
  // so that series of two clusters are never joined or summed together.
  local by(labels) = std.join(', ', (if c.clusterLabel != '' then [c.clusterLabel] else []) + labels),
  // dur('15m'): "15 minutes", for the descriptions.
  local dur(d) =
    local n = std.substr(d, 0, std.length(d) - 1), u = std.substr(d, std.length(d) - 1, 1);
    local unit = { s: 'second', m: 'minute', h: 'hour', d: 'day' }[u];
    n + ' ' + unit + (if n == '1' then '' else 's'),
  // num(0.05): "0.05" (jsonnet would print 0.050000000000000003).
  local num(x) = '%g' % x,
  // durS(900): "15 minutes"; durS(90): "90 seconds".
  local durS(s) = if s % 60 == 0 then dur('%dm' % (s / 60)) else dur('%ds' % s),
  local runbook(alert) = c.runbookURLPattern % std.asciiLower(alert),
  // dashboard(which, vars): the dashboard's link with the alert's labels in its variables.
  local dashboard(which, vars) =
    c.grafanaURL + '/d/' + c.dashboardUIDs[which] + '?'
    + std.join('&', ['var-%s={{ $labels.%s | urlquery }}' % [v, v] for v in vars]),
  local alert(name, expr, forKey, severity, summary, description, dash, vars=['source', 'queue']) = {
    alert: name,
    expr: expr,
    'for': c['for'][forKey],
    labels: { severity: if std.objectHas(c.severities, name) then c.severities[name] else severity },
    annotations: {
      summary: summary,
      description: description,
      runbook_url: runbook(name),
      dashboard_url: dashboard(dash, vars),
    },
  },
  local group = ' (group {{ . }})',
  local withGroup = '{{ with $labels.group }}' + group + '{{ end }}',

  // The rules of the audit that the dedicated alerts cover from the same series: left out of
  // QrelAuditFailed, so that one problem pages once.
  local coveredRules = [
    'dead_letter_queue_not_empty',
    'lease_margin_below_1',
    'lease_margin_below_2',
    'stale_claims',
    'outbox_lagging',
    'dedup_window_shorter_than_retry_horizon',
    'source_watches_nothing',
    'backlog_without_consumer',
    'dead_letters_expire_unread',
  ],
  local auditDescription =
    "qrel's audit finds the rule {{ $labels.rule }} ({{ $labels.severity }}) broken by the configuration of {{ $value }} of the queues of {{ $labels.source }} ({{ $labels.kind }}). "
    + 'qrel_audit_failed{source="{{ $labels.source }}",rule="{{ $labels.rule }}"} names the worst of them; `qrel check` and the landing page name every one. The alert resolves once the configuration is fixed.',

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'qrel-dead-letters',
        rules: [
          // The broker gave up on these deliveries. Someone has to look: after a lease-expiry
          // storm the work may have been done several times, so a blind replay repeats it.
          alert(
            'QrelDeadLetterQueueNotEmpty',
            '%s > 0' % sel('qrel_dead_letter_messages'),
            'deadLetterQueueNotEmpty', 'critical',
            'A dead-letter queue holds messages.',
            '{{ $value }} messages in {{ $labels.dead_letter_queue }}, the dead-letter queue of {{ $labels.queue }} ({{ $labels.source }}, {{ $labels.kind }}), for '
            + dur(c['for'].deadLetterQueueNotEmpty) + '. Classify them against your dedup or claim table before replaying.',
            'deadLetters',
          ),
          // Non-empty already pages; growth says the cause is still active.
          alert(
            'QrelDeadLetterQueueGrowing',
            'delta(%s[15m]) > 0' % sel('qrel_dead_letter_messages'),
            'deadLetterQueueGrowing', 'warning',
            'A dead-letter queue keeps growing.',
            '{{ $labels.dead_letter_queue }} (dead letters of {{ $labels.queue }}, {{ $labels.source }}) grew by {{ $value }} messages in the last 15 minutes, and has kept growing for '
            + dur(c['for'].deadLetterQueueGrowing) + ': messages are still being given up on.',
            'deadLetters',
          ),
          // The dead_letters_expire_unread rule of qrel check from the same series: the DLQ keeps
          // a message no longer than the queue does plus the queue's own (group-less) retry
          // horizon, 0 where there is none. +Inf is "no limit": such a DLQ never fires (the
          // last comparison), a queue without a limit against a finite DLQ does.
          alert(
            'QrelDeadLetterRetentionShort',
            |||
              (
                %(d)s
                  <= on(%(by)s) group_left()
                (
                  max by (%(by)s) (%(r)s)
                    + on(%(by)s) max by (%(by)s) (%(h)s)
                  or
                  max by (%(by)s) (%(r)s)
                )
              ) < +Inf
            ||| % {
              d: sel('qrel_dead_letter_retention_seconds'),
              r: sel('qrel_queue_retention_seconds'),
              h: sel('qrel_retry_horizon_seconds', 'group=""'),
              by: by(['source', 'queue']),
            },
            'deadLetterRetentionShort', 'warning',
            'A dead-letter queue keeps its messages no longer than its source.',
            '{{ $labels.dead_letter_queue }}, the dead-letter queue of {{ $labels.queue }} ({{ $labels.source }}, {{ $labels.kind }}), keeps a message {{ $value | humanizeDuration }}, no longer than {{ $labels.queue }} keeps it plus its retry horizon: a message dead-lettered late in its life expires there before anyone reads it (SQS standard queues keep the original enqueue time). '
            + "Keep dead letters for the longest the broker allows (14 days on SQS) or for the queue's retention plus the time you need to read them; `qrel check` reports it as dead_letters_expire_unread.",
            'deadLetters',
          ),
        ],
      },
      {
        name: 'qrel-lease',
        rules: [
          alert(
            'QrelLeaseMarginLow',
            '%s < %s' % [sel('qrel_lease_margin_ratio'), num(c.leaseMarginLow)],
            'leaseMarginLow', 'warning',
            'A lease margin is below %s.' % num(c.leaseMarginLow),
            'The lease of {{ $labels.queue }}' + withGroup + ' ({{ $labels.source }}) is only {{ $value | printf "%.2f" }} times the slowest handling (p99 or the oldest current hold), for '
            + dur(c['for'].leaseMarginLow) + '. One slow dependency puts it below 1, and then every message is delivered several times.',
            'lease',
          ),
          // Below 1, leases expire under running handlers: duplicates are being made now. Keep
          // `for` short (at most 2m): every minute here is more duplicate side effects.
          alert(
            'QrelLeaseMarginCritical',
            '%s < 1' % sel('qrel_lease_margin_ratio'),
            'leaseMarginCritical', 'critical',
            'A lease margin is below 1: duplicates are being made.',
            'The lease of {{ $labels.queue }}' + withGroup + ' ({{ $labels.source }}) is {{ $value | printf "%.2f" }} times the slowest handling: messages are redelivered while their handlers still run, so their effects happen more than once.',
            'lease',
          ),
          // The hour's trend, extrapolated an hour ahead, crosses 1 while the margin is still at
          // or above 1 (below 1, QrelLeaseMarginCritical says more).
          alert(
            'QrelLeaseMarginTrendingDown',
            'predict_linear(%s[1h], 3600) < 1 and %s >= 1' % [sel('qrel_lease_margin_ratio'), sel('qrel_lease_margin_ratio')],
            'leaseMarginTrendingDown', 'warning',
            'A lease margin is heading below 1 within the hour.',
            "At the last hour's trend, the lease margin of {{ $labels.queue }}" + withGroup + ' ({{ $labels.source }}) will be {{ $value | printf "%.2f" }} in an hour: handlers are getting slower relative to the lease.',
            'lease',
          ),
        ],
      },
      {
        name: 'qrel-backlog',
        rules: [
          // Threshold: qrel:oldest_message_age_threshold_seconds{source,queue} where you define
          // it (override), else oldestMessageAgeSeconds.
          alert(
            'QrelOldestMessageTooOld',
            |||
              %(m)s
                > on(source, queue) group_left() qrel:oldest_message_age_threshold_seconds
              or
              %(m)s > %(t)s
                unless on(source, queue) qrel:oldest_message_age_threshold_seconds
            ||| % { m: sel('qrel_queue_oldest_message_age_seconds'), t: num(c.oldestMessageAgeSeconds) },
            'oldestMessageTooOld', 'warning',
            'The oldest message of a queue is older than its threshold.',
            'The oldest unacknowledged message of {{ $labels.queue }}' + withGroup + ' ({{ $labels.source }}, {{ $labels.kind }}) is {{ $value | humanizeDuration }} old, above the threshold for '
            + dur(c['for'].oldestMessageTooOld) + ': consumers are not keeping up, or one message is stuck.',
            'overview',
          ),
          // Threshold: qrel:consumer_lag_threshold_seconds{source,queue,group} where you define
          // it (override), else consumerLagSeconds. Lag is per consumer group, so the override is too.
          alert(
            'QrelConsumerLagHigh',
            |||
              %(m)s
                > on(source, queue, group) group_left() qrel:consumer_lag_threshold_seconds
              or
              %(m)s > %(t)s
                unless on(source, queue, group) qrel:consumer_lag_threshold_seconds
            ||| % { m: sel('qrel_consumer_lag_seconds'), t: num(c.consumerLagSeconds) },
            'consumerLagHigh', 'warning',
            'A consumer group is further behind than its threshold.',
            'Consumer group {{ $labels.group }} of {{ $labels.queue }} ({{ $labels.source }}, {{ $labels.kind }}) has not consumed an entry that is {{ $value | humanizeDuration }} old, above the threshold for '
            + dur(c['for'].consumerLagHigh) + '.',
            'overview',
          ),
          // Ready messages and no consumer, only where the kind counts consumers (no series, no
          // alert: "cannot tell" is never 0). The result keeps the ready series, so $value is the
          // backlog. A dead-letter queue waits for a person, not a consumer: QrelDeadLetterQueueNotEmpty
          // is its alert, so the queues some qrel_dead_letter_messages names are left out. 10
          // minutes, past a deploy's restart of the workers.
          alert(
            'QrelBacklogWithoutConsumer',
            |||
              (%(ready)s > 0 and ignoring(state) %(consumers)s == 0)
              unless on(%(by)s)
                label_replace(max by(%(byd)s) (%(dl)s), "queue", "$1", "dead_letter_queue", "(.+)")
            ||| % {
              ready: sel('qrel_queue_messages', 'state="ready", partition=""'),
              consumers: sel('qrel_queue_consumers'),
              dl: sel('qrel_dead_letter_messages'),
              by: by(['source', 'vhost', 'queue']),
              byd: by(['source', 'vhost', 'dead_letter_queue']),
            },
            'backlogWithoutConsumer', 'critical',
            'Messages wait on a queue that has no consumer.',
            '{{ $value }} messages are ready on {{ $labels.queue }}' + withGroup + ' ({{ $labels.source }}, {{ $labels.kind }}) and the broker has counted no consumer on it for '
            + dur(c['for'].backlogWithoutConsumer) + ': nothing takes them, so the backlog only grows and ages. Start (or fix the connection of) the consumers of this queue, or delete a queue nothing should read; `qrel check` reports it as backlog_without_consumer.',
            'overview',
          ),
        ],
      },
      {
        name: 'qrel-duplicates',
        rules: [
          // Two measures, whichever the broker has: a redelivery or lease-expiry counter
          // (beanstalkd has both, the first `or` keeps one), else the pending messages delivered
          // more than once. The description tells them apart by the series name, which only the
          // gauge keeps.
          alert(
            'QrelRedeliveriesHigh',
            |||
              (rate(%s[10m]) or rate(%s[10m])) > %s
              or
              %s > %s
            ||| % [sel('qrel_redeliveries_total'), sel('qrel_lease_expiries_total'), num(c.redeliveriesPerSecond), sel('qrel_messages_redelivered'), num(c.redeliveredPendingMessages)],
            'redeliveriesHigh', 'warning',
            'A queue redelivers many messages.',
            '{{ $labels.queue }}' + withGroup + ' ({{ $labels.source }}, {{ $labels.kind }}) {{ if eq (index $labels "__name__") "qrel_messages_redelivered" }}has {{ $value }} pending messages that were delivered more than once (above '
            + num(c.redeliveredPendingMessages) + '){{ else }}redelivers {{ $value | printf "%.2f" }} messages per second over 10 minutes (above ' + num(c.redeliveriesPerSecond) + '){{ end }}, for '
            + dur(c['for'].redeliveriesHigh) + ': leases expire or handlers fail, and each redelivery may repeat a side effect.',
            'overview',
          ),
          // Stale claims are counted over the whole claim table: each one stays until someone
          // looks, like a dead letter, so the alert stays too.
          alert(
            'QrelStaleClaims',
            '%s > 0' % sel('qrel_claims', 'state="stale"'),
            'staleClaims', 'warning',
            'A claim table holds claims that were never finished.',
            '{{ $value }} rows of the claim table {{ $labels.queue }} ({{ $labels.source }}) were claimed longer ago than the in-flight window and never marked done: the attempt died, and its effect either happened without its stamp or never happened.',
            'overview',
          ),
          // First where one source exports both facts for a queue (same source and queue
          // labels); then where the dedup table and the broker are different sources, which only
          // the configuration links: qrel's audit compares those (not twice for a queue).
          alert(
            'QrelDedupWindowShorterThanRetryHorizon',
            |||
              %(w)s
                < on(%(by)s) group_left() max by (%(by)s) (%(h)s)
              or
              (
                %(a)s == 1
                  unless on(%(by)s)
                %(w)s
                  < on(%(by)s) group_left() max by (%(by)s) (%(h)s)
              )
            ||| % {
              w: sel('qrel_dedup_window_seconds'),
              h: sel('qrel_retry_horizon_seconds'),
              a: sel('qrel_audit_failed', 'rule="dedup_window_shorter_than_retry_horizon"'),
              by: by(['source', 'queue']),
            },
            'dedupWindowShorterThanRetryHorizon', 'warning',
            'A dedup window is shorter than the retry horizon.',
            '{{ $labels.queue }} ({{ $labels.source }}, {{ $labels.kind }}) forgets a dedup key {{ if eq (index $labels "__name__") "qrel_dedup_window_seconds" }}after {{ $value | humanizeDuration }}, {{ else }}(qrel\'s audit) {{ end }}before the broker\'s last retry (qrel_retry_horizon_seconds): a late retry is not recognised as a duplicate and its work is done again.',
            'overview',
          ),
        ],
      },
      {
        name: 'qrel-clock',
        rules: [
          // Rows a writer stamped after the database's now() are in no window of the other
          // series: they show as missing work until the clock that wrote them is fixed.
          alert(
            'QrelClockSkew',
            '%s > 0' % sel('qrel_future_stamped_rows'),
            'clockSkew', 'warning',
            'Rows are stamped in the future.',
            "{{ $value }} rows of the {{ $labels.kind }} {{ $labels.queue }} ({{ $labels.source }}) carry a time after the database's now(), for "
            + dur(c['for'].clockSkew) + ': the clock of a host that writes them runs ahead. They are left out of every window, so the counts and the handler times of {{ $labels.queue }} miss them.',
            'overview',
          ),
        ],
      },
      {
        name: 'qrel-outbox',
        rules: [
          alert(
            'QrelOutboxLagging',
            '%s > %s' % [sel('qrel_outbox_oldest_pending_age_seconds'), num(c.outboxOldestPendingSeconds)],
            'outboxLagging', 'warning',
            'An outbox has an unpublished row older than %s.' % durS(c.outboxOldestPendingSeconds),
            'The oldest row of the outbox {{ $labels.queue }} ({{ $labels.source }}) that the relay has not published is {{ $value | humanizeDuration }} old, above '
            + durS(c.outboxOldestPendingSeconds) + ' for ' + dur(c['for'].outboxLagging) + ': the relay is stuck, slow or failing, and the events it owes are late.',
            'overview',
          ),
        ],
      },
      {
        name: 'qrel-audit',
        rules: [
          // The rules of severity warning (QrelAuditFailedCritical pages on the critical ones:
          // an alert's severity is a literal, so Alertmanager can route it by the rule file
          // alone). Rules the dedicated alerts above already cover (from the same series) are
          // left out, so one problem pages once. One alert per source and rule, from the count,
          // so a fleet that breaks a rule by design pages once, not once per queue
          // (qrel_audit_failed has only the worst queues: audit.queue_series).
          alert(
            'QrelAuditFailed',
            '%s > 0' % sel('qrel_audit_failed_queues', 'severity!="critical",rule!~"%s"' % std.join('|', coveredRules)),
            'auditFailed', 'warning',
            "A reliability rule of qrel's audit is broken.",
            auditDescription,
            'overview', ['source'],
          ),
          // The critical rules of the audit that no alert above covers; as QrelAuditFailed.
          alert(
            'QrelAuditFailedCritical',
            '%s > 0' % sel('qrel_audit_failed_queues', 'severity="critical",rule!~"%s"' % std.join('|', coveredRules)),
            'auditFailed', 'critical',
            "A critical reliability rule of qrel's audit is broken.",
            auditDescription,
            'overview', ['source'],
          ),
        ],
      },
      {
        name: 'qrel-exporter',
        rules: [
          // The fraction of successful collections over 10 minutes, so a source that fails
          // every other scrape is caught too. While a source is down its series are missing and
          // its other alerts resolve: this one says they are blind, not fixed.
          alert(
            'QrelCollectorDown',
            'avg_over_time(%s[10m]) < 0.5' % sel('qrel_collector_up'),
            'collectorDown', 'critical',
            'qrel cannot collect a source.',
            'Only {{ $value | humanizePercentage }} of the collections of {{ $labels.source }} ({{ $labels.kind }}) succeeded over the last 10 minutes, for '
            + dur(c['for'].collectorDown) + '. Its other alerts cannot fire meanwhile. qrel_collector_errors_total{source="{{ $labels.source }}"} and the exporter log say why.',
            'exporter', ['source'],
          ),
          // Data that is served but old: a cached collection (min_interval) or delayed cloud
          // metrics (qrel_sample_age_seconds), or a last success far behind Prometheus' clock
          // while the source counts as up. A source that is down is QrelCollectorDown's.
          alert(
            'QrelCollectorStale',
            |||
              %(age)s > %(t)s
              or
              (time() - %(last)s > %(t)s)
                unless on(%(by)s) %(up)s == 0
            ||| % {
              age: sel('qrel_sample_age_seconds'),
              last: sel('qrel_collector_last_success_timestamp_seconds'),
              up: sel('qrel_collector_up'),
              t: num(c.collectorStaleSeconds),
              by: by(['source', 'kind']),
            },
            'collectorStale', 'warning',
            'qrel serves old data for a source.',
            'The values qrel serves for {{ $labels.source }} ({{ $labels.kind }}) are {{ $value | humanizeDuration }} old, above '
            + durS(c.collectorStaleSeconds) + ' for ' + dur(c['for'].collectorStale)
            + ": alerts on this source see the past. Check the source's min_interval, the cloud metric delay and the clocks of the exporter and Prometheus.",
            'exporter', ['source'],
          ),
          // qrel's own reading is partial, not the queue: a warning, after 15 minutes so that a
          // burst the consumers drain by themselves does not open a ticket.
          alert(
            'QrelPendingScanTruncated',
            '%s > 0' % sel('qrel_pending_scan_truncated_groups'),
            'pendingScanTruncated', 'warning',
            'qrel reads only part of the pending entries of some consumer groups.',
            '{{ $value }} consumer groups of {{ $labels.source }} ({{ $labels.kind }}) have had more pending entries than its pending_scan_limit for '
            + dur(c['for'].pendingScanTruncated) + ': their qrel_messages_redelivered, qrel_lease_oldest_age_seconds and qrel_lease_margin_ratio cover only the oldest pending_scan_limit entries, so redeliveries and long holds among the newer ones go unseen (qrel_queue_messages{state="in_flight"} stays exact). Raise the source\'s pending_scan_limit, or drain the backlog.',
            'exporter', ['source'],
          ),
          // A source that is up but found no queue (a pattern or discovery that matches nothing,
          // an exclude that leaves everything out) has no series for any other alert to fire on.
          // qrel_source_queues is served only while the source is up: a down one is
          // QrelCollectorDown's. 15 minutes, so that a queue recreated by a deploy does not warn.
          alert(
            'QrelSourceWatchesNothing',
            '%s == 0' % sel('qrel_source_queues'),
            'sourceWatchesNothing', 'warning',
            'A qrel source watches no queue.',
            'The source {{ $labels.source }} ({{ $labels.kind }}) has been up for ' + dur(c['for'].sourceWatchesNothing)
            + " and found no queue: its discovery or pattern matched nothing (or its exclude left everything out), so no alert on its queues can fire. Check its prefix, pattern or exclude against the names the broker has, or name the queues; `qrel check` reports it as source_watches_nothing.",
            'exporter', ['source'],
          ),
          // The scrape targets of exporterSelector (docs/alerts.md#the-job-name). absent(): no
          // target at all, the job was removed or service discovery lost it.
          alert(
            'QrelExporterDown',
            'up{%(s)s} == 0 or absent(up{%(s)s})' % { s: c.exporterSelector },
            'exporterDown', 'critical',
            'Prometheus cannot scrape a qrel exporter.',
            '{{ with $labels.instance }}The qrel exporter at {{ . }} has not answered Prometheus{{ else }}Prometheus has had no target matching '
            + c.exporterSelector + '{{ end }} for ' + dur(c['for'].exporterDown) + ': no qrel alert can fire for the sources it serves.',
            'exporter', ['job'],
          ),
        ],
      },
    ],
  },
}
