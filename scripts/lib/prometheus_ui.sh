# prometheus_ui.sh: where a running Prometheus serves its web UI pages (sourced, not run).
# Prometheus' own builds serve the React UI at /alerts and /graph (and the old one under
# /classic/ until 3.0); Debian's prometheus 2.42 is built without the React UI and answers 404
# there, serving /classic/alerts and /classic/graph. So the paths are asked of the server, not
# assumed: its root redirects to its default page, and the candidate prefix that answers
# /alerts with 200 wins.
# shellcheck shell=bash

# prometheus_ui_prefix URL: prints "" or "/classic" (the prefix of the UI pages), or fails when
# neither answers.
prometheus_ui_prefix() {
  local base=$1 home first p
  home=$(curl -s -o /dev/null -w '%{redirect_url}' "$base/" 2>/dev/null || true)
  case $home in */classic/*) first=/classic ;; *) first="" ;; esac
  for p in "$first" "" /classic; do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$base$p/alerts" 2>/dev/null)" = 200 ]; then
      printf '%s\n' "$p"
      return 0
    fi
  done
  return 1
}

# prometheus_graph_url URL PREFIX EXPR: a link to the graph of EXPR over the last 15 minutes (the
# g0.* parameters both UIs read).
prometheus_graph_url() {
  printf '%s%s/graph?g0.expr=%s&g0.tab=0&g0.range_input=15m\n' "$1" "$2" \
    "$(jq -rn --arg e "$3" '$e | @uri')"
}
