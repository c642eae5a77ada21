// qrel's Grafana dashboards: the JSON models in mixin/dashboards/ (edit them in Grafana and export,
// docs/dashboards.md), with the mixin's _config applied: the uids (and every link between the
// dashboards), the shared tag, the cluster label and whether its variable shows.
{
  local c = $._config,
  local models = {
    overview: importstr 'dashboards/qrel-overview.json',
    lease: importstr 'dashboards/qrel-lease.json',
    deadLetters: importstr 'dashboards/qrel-dead-letters.json',
    exporter: importstr 'dashboards/qrel-exporter.json',
  },
  // The uids the models are written with, and what each becomes.
  local uids = { 'qrel-overview': c.dashboardUIDs.overview, 'qrel-lease': c.dashboardUIDs.lease, 'qrel-dead-letters': c.dashboardUIDs.deadLetters, 'qrel-exporter': c.dashboardUIDs.exporter },

  // Every string of a model, rewritten: the cluster label in selectors and label_values(), and
  // the uids in data links (/d/<uid>?...).
  local rewrite(s) =
    local withLabel = if c.clusterLabel == 'cluster' then s else
      std.strReplace(std.strReplace(s, 'cluster=~"$cluster"', c.clusterLabel + '=~"$cluster"'),
                     'label_values(qrel_build_info, cluster)', 'label_values(qrel_build_info, %s)' % c.clusterLabel);
    std.foldl(function(acc, old) std.strReplace(acc, '/d/' + old + '?', '/d/' + uids[old] + '?'), std.objectFields(uids), withLabel),
  local walk(v) =
    if std.isString(v) then rewrite(v)
    else if std.isArray(v) then [walk(x) for x in v]
    else if std.isObject(v) then { [k]: walk(v[k]) for k in std.objectFields(v) }
    else v,
  local dashboard(json) =
    local d = walk(std.parseJson(json));
    d {
      uid: uids[d.uid],
      tags: [c.dashboardTag] + [t for t in d.tags if t != 'qrel'],
      links: [l { tags: [c.dashboardTag] } for l in d.links],
      templating+: {
        list: [
          if v.name == 'cluster' then v { hide: if c.showMultiCluster then 0 else 2 } else v
          for v in d.templating.list
        ],
      },
    },

  grafanaDashboards+:: {
    ['%s.json' % c.dashboardUIDs[k]]: dashboard(models[k])
    for k in std.objectFields(models)
  },
}
