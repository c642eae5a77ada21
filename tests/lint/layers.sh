#!/usr/bin/env bash
# Proves the layering of the built libraries: inside one static library, no object file uses
# another that uses it back, directly or round a longer circle, and in a kind's library
# (collectors/<kind>/) nothing uses <kind>.c, the top of the folder (collectors/README.md, Layout).
# A circle between files means neither can be read, tested or moved without the other; the
# compiler cannot see one, the linker's symbol tables can.
#
# Usage: layers.sh BUILD_DIR [LIBRARY...]
#   LIBRARY is a library's name without lib/.a (qrel_core, qrel_kind_kafka, qrel_common_http)
#   or the path of its archive; none: every qrel library of the build (the kinds, the common
#   helpers, the core, the engine, the exporter's web side qrel_web and the CLI's qrel_dlq).
#   Prints each circle with one symbol for each of its uses; exits 1 on any.
set -u
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 BUILD_DIR [LIBRARY...]" >&2
  exit 2
fi
build=$1
shift

archives=()
if [ $# -eq 0 ]; then
  while IFS= read -r a; do
    archives+=("$a")
  done < <(find "$build" -name 'libqrel_*.a' -not -path '*/CMakeFiles/*' | sort)
else
  for name in "$@"; do
    if [ -f "$name" ]; then
      archives+=("$name")
      continue
    fi
    a=$(find "$build" -name "lib$name.a" -not -path '*/CMakeFiles/*' | head -n 1)
    if [ -z "$a" ]; then
      echo "layers: no lib$name.a under $build (built?)" >&2
      exit 2
    fi
    archives+=("$a")
  done
fi
if [ ${#archives[@]} -eq 0 ]; then
  echo "layers: no libqrel_*.a under $build (built?)" >&2
  exit 2
fi

status=0
for a in "${archives[@]}"; do
  lib=$(basename "$a" .a)
  lib=${lib#lib}
  # The top of a kind's folder: the object of collectors/<kind>/<kind>.c.
  top=""
  case $lib in
    qrel_kind_*) top="${lib#qrel_kind_}.c.o" ;;
  esac
  # nm -P: "archive[member]: symbol type value size"; -g: external symbols only (a static
  # function is the file's own business).
  if ! out=$(nm -g -P -A "$a" 2>/dev/null); then
    echo "layers: nm failed on $a" >&2
    status=1
    continue
  fi
  if ! printf '%s\n' "$out" | awk -v lib="$lib" -v top="$top" '
    function member(s) {
      sub(/^.*\[/, "", s)
      sub(/\]:$/, "", s)
      return s
    }
    { obj = member($1); sym = $2; type = $3 }
    type == "U" { used[obj, sym] = 1; next }
    type ~ /^[A-TV-Z]$/ { def[sym] = obj; objs[obj] = 1 }
    END {
      for (k in used) {
        split(k, p, SUBSEP)
        from = p[1]; sym = p[2]
        if (!(sym in def) || def[sym] == from)
          continue
        to = def[sym]
        objs[from] = 1
        if (!((from, to) in edge) || sym < edge[from, to])
          edge[from, to] = sym
        succ[from] = succ[from] " " to
      }
      bad = 0
      # The top of a kind is used by nothing in its folder.
      if (top != "")
        for (e in edge) {
          split(e, p, SUBSEP)
          if (p[2] == top) {
            printf "%s: %s uses %s, the top of the folder (%s)\n", lib, p[1], top, edge[e]
            bad = 1
          }
        }
      # Circles: the strongly connected components of the uses graph (Tarjan) with more than
      # one object.
      n = 0
      for (o in objs)
        if (!(o in index_of))
          strong(o)
      for (c = 1; c <= ncomp; c++) {
        if (size[c] < 2)
          continue
        bad = 1
        printf "%s: circle between %s:\n", lib, comp[c]
        for (e in edge) {
          split(e, p, SUBSEP)
          if (which[p[1]] == c && which[p[2]] == c)
            printf "  %s uses %s (%s)\n", p[1], p[2], edge[e]
        }
      }
      exit bad
    }
    function strong(v,    ns, i, w, list) {
      index_of[v] = low[v] = ++n
      stack[++sp] = v
      on[v] = 1
      ns = split(succ[v], list, " ")
      for (i = 1; i <= ns; i++) {
        w = list[i]
        if (!(w in index_of)) {
          strong(w)
          if (low[w] < low[v])
            low[v] = low[w]
        } else if (on[w] && index_of[w] < low[v])
          low[v] = index_of[w]
      }
      if (low[v] == index_of[v]) {
        ncomp++
        do {
          w = stack[sp--]
          on[w] = 0
          which[w] = ncomp
          size[ncomp]++
          comp[ncomp] = comp[ncomp] (size[ncomp] > 1 ? " " : "") w
        } while (w != v)
      }
    }
  '; then
    status=1
  fi
done
exit $status
