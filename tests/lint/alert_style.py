#!/usr/bin/env python3
"""alert_style.py RULE_FILE...: the alert style of the Prometheus monitoring mixins (the rules of
mixtool's alert lint), on every alerting rule of the files:
  - the name is CamelCase (letters and digits, a capital first);
  - `severity` is a label, a literal (never a template: Alertmanager routes on it, and a routing
    tree is written for known values) and one of critical, warning, info;
  - `summary` is one static sentence ending with a period (it titles a page or a notification,
    and alerts with the same summary group well); the details go to `description`, which is
    templated (it names the queue, source and figures);
  - `runbook_url` and `dashboard_url` are set.
Prints one line per broken rule ("FILE: ALERT: what") and exits 1 when there is any.
Needs PyYAML (Debian's python3-yaml)."""
import re
import sys

import yaml

SEVERITIES = ("critical", "warning", "info")


def problems(rule):
    labels = rule.get("labels") or {}
    ann = rule.get("annotations") or {}
    name = rule["alert"]
    if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", name):
        yield "the name is not CamelCase"
    sev = labels.get("severity")
    if sev is None:
        yield "no severity label"
    elif "{{" in str(sev):
        yield "severity is templated (%s): make it a literal, one alert per severity" % sev
    elif sev not in SEVERITIES:
        yield "severity %r is none of %s" % (sev, ", ".join(SEVERITIES))
    summary = ann.get("summary")
    if not summary:
        yield "no summary"
    else:
        if "{{" in summary:
            yield "the summary is templated: make it a static sentence, the details go to description"
        if not summary.rstrip().endswith("."):
            yield "the summary does not end with a period"
    desc = ann.get("description")
    if not desc:
        yield "no description"
    elif "{{" not in desc:
        yield "the description names no label or value (a template)"
    for key in ("runbook_url", "dashboard_url"):
        if not ann.get(key):
            yield "no %s" % key


def main(paths):
    found = 0
    alerts = 0
    for path in paths:
        for group in (yaml.safe_load(open(path, encoding="utf-8")) or {}).get("groups", []):
            for rule in group.get("rules", []):
                if "alert" not in rule:
                    continue
                alerts += 1
                for what in problems(rule):
                    found += 1
                    print("%s: %s: %s" % (path, rule["alert"], what))
    if alerts == 0:
        print("no alerting rule in %s" % " ".join(paths))
        return 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
