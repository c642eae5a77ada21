// Service level objectives, as multi-window multi-burn-rate alerts (the SRE workbook's, as
// kubernetes-mixin and sloth write them): recording rules give the error ratio of each SLI over
// seven windows, with sloth's names (slo:sli_error:ratio_rate5m, ...); an alert, in the same group, pages when the
// error budget burns fast over a long window and a short one at once, and opens a ticket when it
// burns slowly. Rendered into alerts/qrel-rules.yml (recording rules and the alerts that read them).
//
// The freshness SLO: a queue is fresh while its oldest message is younger than its threshold (the
// one QrelOldestMessageTooOld uses: qrel:oldest_message_age_threshold_seconds where you define it,
// else oldestMessageAgeSeconds); the objective is the fraction of time it should be.
//
// The dead-letter SLO: of the messages a queue finished (consumed or dead-lettered), the fraction
// that should not have been dead-lettered, from the broker's own counters.
{
  local c = $._config,
  local sel(metric, matchers='') =
    local all = std.filter(function(m) m != '', [c.qrelSelector, matchers]);
    if std.length(all) == 0 then metric else metric + '{' + std.join(', ', all) + '}',
  local num(x) = '%g' % x,
  local windows = ['5m', '30m', '1h', '2h', '6h', '1d', '3d'],
  local slothLabels(slo) = { sloth_service: 'qrel', sloth_slo: slo },
  local labels = slothLabels('queue-freshness'),
  local budget = 1 - c.freshnessObjective,
  // burnOf(slo, budget, long, short, factor): both windows of the SLO burn its budget `factor`
  // times faster than it lasts.
  local burnOf(slo, budget, long, short, factor) =
    '(slo:sli_error:ratio_rate%(l)s{sloth_slo="%(slo)s"} > %(t)s and slo:sli_error:ratio_rate%(s)s{sloth_slo="%(slo)s"} > %(t)s)'
    % { slo: slo, l: long, s: short, t: num(factor * budget) },
  local burn(long, short, factor) = burnOf('queue-freshness', budget, long, short, factor),
  local dlBudget = 1 - c.deadLetterObjective,
  local dlBurn(long, short, factor) = burnOf('queue-dead-letters', dlBudget, long, short, factor),
  local runbook(alert) = c.runbookURLPattern % std.asciiLower(alert),
  local dashboard = c.grafanaURL + '/d/' + c.dashboardUIDs.overview + '?var-source={{ $labels.source | urlquery }}&var-queue={{ $labels.queue | urlquery }}',

  prometheusRules+:: {
    groups+: [
      {
        name: 'qrel-slo-freshness',
        rules: [
          // 1 while the queue's oldest message is older than its threshold, else 0: the SLI's
          // error, per queue (and consumer group where the kind has them).
          {
            record: 'qrel:queue_freshness_error:bool',
            expr: |||
              %(m)s
                > bool on(source, queue) group_left() qrel:oldest_message_age_threshold_seconds
              or
              %(m)s > bool %(t)s
                unless on(source, queue) qrel:oldest_message_age_threshold_seconds
            ||| % { m: sel('qrel_queue_oldest_message_age_seconds'), t: num(c.oldestMessageAgeSeconds) },
          },
        ] + [
          {
            record: 'slo:sli_error:ratio_rate' + w,
            expr: 'avg_over_time(qrel:queue_freshness_error:bool[%s])' % w,
            labels: labels,
          }
          for w in windows
        ] + [
          { record: 'slo:objective:ratio', expr: 'vector(%s)' % num(c.freshnessObjective), labels: labels },
          { record: 'slo:error_budget:ratio', expr: 'vector(%s)' % num(budget), labels: labels },
        ] + [
          // The alerts, in the same group: a group's rules run in order, so they read the ratios
          // of this very evaluation (in another group they would read this one's or the last
          // one's, whichever group ran first).
          // 14.4 times over 1h and 5m spends 2% of a 30-day budget in an hour; 6 times over 6h
          // and 30m, 5% in six hours: page.
          {
            alert: 'QrelFreshnessBudgetBurnFast',
            expr: '%s\nor\n%s\n' % [burn('1h', '5m', 14.4), burn('6h', '30m', 6)],
            'for': c['for'].freshnessBudgetBurnFast,
            labels: { severity: 'critical' },
            annotations: {
              summary: 'A queue burns its freshness error budget fast.',
              description: '{{ $labels.queue }}{{ with $labels.group }} (group {{ . }}){{ end }} ({{ $labels.source }}) has had its oldest message above its threshold for {{ $value | humanizePercentage }} of the last hour or six hours, against an objective of '
                           + num(100 * c.freshnessObjective) + '% fresh: at this rate the error budget is gone within days. Consumers are not keeping up, or messages are stuck.',
              runbook_url: runbook('QrelFreshnessBudgetBurnFast'),
              dashboard_url: dashboard,
            },
          },
          // 3 times over 1d and 2h, or once over 3d and 6h: the budget will not last the month.
          {
            alert: 'QrelFreshnessBudgetBurnSlow',
            expr: '%s\nor\n%s\n' % [burn('1d', '2h', 3), burn('3d', '6h', 1)],
            'for': c['for'].freshnessBudgetBurnSlow,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'A queue burns its freshness error budget slowly.',
              description: '{{ $labels.queue }}{{ with $labels.group }} (group {{ . }}){{ end }} ({{ $labels.source }}) has had its oldest message above its threshold for {{ $value | humanizePercentage }} of the last day or three days, against an objective of '
                           + num(100 * c.freshnessObjective) + '% fresh: the error budget will not last its 30 days.',
              runbook_url: runbook('QrelFreshnessBudgetBurnSlow'),
              dashboard_url: dashboard,
            },
          }
        ],
      },
      {
        name: 'qrel-slo-dead-letters',
        // The error ratio of each queue over a window: dead-lettered / (consumed + dead-lettered),
        // from the rates of the broker's counters. A consumer group reads every message of its
        // stream or topic, so consumption is summed over the groups: each group's handling of a
        // message is one unit of work, and a dead letter is one that failed (the counter of dead
        // letters is per queue). A queue without both counters has no ratio: absent, never 0. A
        // window in which nothing was consumed or dead-lettered has none either (0/0 is NaN, which
        // no burn-rate comparison passes).
        rules: [
          {
            record: 'slo:sli_error:ratio_rate' + w,
            expr: |||
              rate(%(d)s[%(w)s])
                / (sum without (group) (rate(%(c)s[%(w)s])) + rate(%(d)s[%(w)s]))
            ||| % { d: sel('qrel_messages_dead_lettered_total'), c: sel('qrel_messages_consumed_total', 'partition=""'), w: w },
            labels: slothLabels('queue-dead-letters'),
          }
          for w in windows
        ] + [
          { record: 'slo:objective:ratio', expr: 'vector(%s)' % num(c.deadLetterObjective), labels: slothLabels('queue-dead-letters') },
          { record: 'slo:error_budget:ratio', expr: 'vector(%s)' % num(dlBudget), labels: slothLabels('queue-dead-letters') },
        ] + [
          // As the freshness SLO's: 14.4 times over 1h and 5m, or 6 times over 6h and 30m, pages.
          {
            alert: 'QrelDeadLetterBudgetBurnFast',
            expr: '%s\nor\n%s\n' % [dlBurn('1h', '5m', 14.4), dlBurn('6h', '30m', 6)],
            'for': c['for'].deadLetterBudgetBurnFast,
            labels: { severity: 'critical' },
            annotations: {
              summary: 'A queue burns its dead-letter error budget fast.',
              description: '{{ $labels.queue }} ({{ $labels.source }}, {{ $labels.kind }}) dead-lettered {{ $value | humanizePercentage }} of the messages it finished over the last hour or six hours, against an objective of '
                           + num(100 * c.deadLetterObjective) + '% not dead-lettered: at this rate the error budget is gone within days. Handlers fail, or leases expire under them until the delivery limit gives up.',
              runbook_url: runbook('QrelDeadLetterBudgetBurnFast'),
              dashboard_url: dashboard,
            },
          },
          // 3 times over 1d and 2h, or once over 3d and 6h: the budget will not last the month.
          {
            alert: 'QrelDeadLetterBudgetBurnSlow',
            expr: '%s\nor\n%s\n' % [dlBurn('1d', '2h', 3), dlBurn('3d', '6h', 1)],
            'for': c['for'].deadLetterBudgetBurnSlow,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'A queue burns its dead-letter error budget slowly.',
              description: '{{ $labels.queue }} ({{ $labels.source }}, {{ $labels.kind }}) dead-lettered {{ $value | humanizePercentage }} of the messages it finished over the last day or three days, against an objective of '
                           + num(100 * c.deadLetterObjective) + '% not dead-lettered: the error budget will not last its 30 days.',
              runbook_url: runbook('QrelDeadLetterBudgetBurnSlow'),
              dashboard_url: dashboard,
            },
          },
        ],
      },
    ],
  },
}
