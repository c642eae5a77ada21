// Recording rules on the flow out of each queue: how long its backlog takes to drain at the rate
// it is being consumed, and how many redeliveries each consumed message costs. Rendered into
// alerts/qrel-rules.yml; the drain time is the overview dashboard's "Time to drain" panel.
//
// Both divide by rate(qrel_messages_consumed_total[5m]), a counter the broker keeps, so a queue
// whose kind has none gets no series here: "cannot tell" is absent, never 0 (docs/metrics.md's
// Flow table says which kinds count). The divisions match on every label but `state`: a
// consumer group's backlog is divided by that group's own consumption (each group of a stream
// or topic reads every message, so summing groups would let a busy group hide a stuck one), and
// rabbitmq's vhost and the cluster label stay apart. Kafka's per-partition series (with
// per_partition) come beside the totals, so only the totals (partition="") are read.
{
  local c = $._config,
  local sel(metric, matchers='') =
    local all = std.filter(function(m) m != '', [c.qrelSelector, matchers]);
    if std.length(all) == 0 then metric else metric + '{' + std.join(', ', all) + '}',
  local ready = 'sum without (state) (%s)' % sel('qrel_queue_messages', 'state="ready", partition=""'),
  local consumed = 'rate(%s[5m])' % sel('qrel_messages_consumed_total', 'partition=""'),

  prometheusRules+:: {
    groups+: [
      {
        name: 'qrel-flow',
        rules: [
          // Seconds until the ready backlog is gone at the last 5 minutes' consumption rate.
          // Rate 0 with a backlog is +Inf (nothing drains it: honest, and what the panel shows
          // as the consumers stop); no backlog is 0 whatever the rate, where 0/0 would be NaN.
          // The second branch keeps that 0 to queues whose counter exists.
          {
            record: 'qrel:queue_drain_seconds',
            expr: |||
              (%(ready)s > 0)
                / %(consumed)s
              or
              %(ready)s == 0
                and %(consumed)s
            ||| % { ready: ready, consumed: consumed },
          },
          // Redeliveries per consumed message over 5 minutes, where the broker counts both
          // (rabbitmq, beanstalkd): 0 is clean, 1 is every message delivered twice (the worked
          // incident's storm reads about 2). Redeliveries with nothing consumed are +Inf; an
          // idle window (0/0) has no ratio and is left out (NaN >= 0 is false).
          {
            record: 'qrel:queue_redeliveries_per_consumed:ratio_rate5m',
            expr: |||
              rate(%(r)s[5m])
                / %(consumed)s
              >= 0
            ||| % { r: sel('qrel_redeliveries_total', 'partition=""'), consumed: consumed },
          },
        ],
      },
    ],
  },
}
