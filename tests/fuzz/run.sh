#!/usr/bin/env bash
# Runs the libFuzzer targets of a QREL_FUZZ build (build-san in scripts/test.sh) (see tests/fuzz/CMakeLists.txt): first every saved
# crash input in tests/fuzz/regressions/<target>/ once (each must pass now), then each target for
# QREL_FUZZ_SECONDS (default 16) from its seed corpus: tests/fuzz/corpus/<target>/ plus the
# test fixtures that fit. New corpus entries go to a temp dir, never into the tree.
#   tests/fuzz/run.sh BUILD_DIR [TARGET...]        QREL_FUZZ_SECONDS=600 for a longer run
# A crash leaves its input in the temp dir and prints its path: copy it into
# tests/fuzz/regressions/<target>/ with the fix, so every later run replays it.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR [TARGET...]}" && pwd)
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(fuzz_config fuzz_accept fuzz_promtext fuzz_json fuzz_redis fuzz_beanstalk
    fuzz_beanstalk_split fuzz_flags fuzz_dlq_report fuzz_activemq fuzz_laravel)
fi
seconds=${QREL_FUZZ_SECONDS:-16}
work=$(mktemp -d "${TMPDIR:-/tmp}/qrel-fuzz.XXXXXX")
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
failed=0

for t in "${targets[@]}"; do
  bin=$build/tests/fuzz/$t
  name=${t#fuzz_}
  if [ ! -x "$bin" ]; then
    echo "fuzz: $t: not built in $build" >&2
    failed=1
    continue
  fi
  mkdir -p "$work/$name/corpus" "$work/$name/seeds"
  seeds=("$root/tests/fuzz/corpus/$name")
  case $name in
    config) cp "$root/qrel.example.yml" "$work/$name/seeds/" ;;
    json) seeds+=("$root/tests/fixtures/nats" "$root/tests/fixtures/pubsub") ;;
    beanstalk_split) seeds+=("$root/tests/fixtures/beanstalkd") ;; # the first byte picks the step
    activemq) seeds+=("$root/tests/fixtures/activemq") ;;
    laravel) cp "$root"/tests/fixtures/postgres/laravel_failed_*.json "$work/$name/seeds/" ;;
  esac
  seeds+=("$work/$name/seeds")
  # fuzz_flags runs the commands' usage errors, which print on every run: libFuzzer keeps its
  # own stderr and drops the target's stdout and stderr.
  quiet=()
  [ "$name" = flags ] && quiet=(-close_fd_mask=3)
  regressions=("$root/tests/fuzz/regressions/$name"/*)
  if [ -e "${regressions[0]}" ]; then
    if "$bin" "${regressions[@]}" > "$work/$name/regressions.log" 2>&1; then
      echo "fuzz: $t: ${#regressions[@]} regression input(s) pass"
    else
      echo "fuzz: $t: a regression input fails again:" >&2
      tail -30 "$work/$name/regressions.log" >&2
      failed=1
    fi
  fi
  if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 "${quiet[@]}" \
      -artifact_prefix="$work/$name/" -print_final_stats=1 \
      "$work/$name/corpus" "${seeds[@]}" > "$work/$name/fuzz.log" 2>&1; then
    echo "fuzz: $t: $(grep -E '^stat::number_of_executed_units' "$work/$name/fuzz.log" | awk '{print $2}') runs in ${seconds}s, no crash"
  else
    echo "fuzz: $t: FAILED; input saved as $(ls "$work/$name"/crash-* "$work/$name"/leak-* "$work/$name"/timeout-* "$work/$name"/oom-* 2>/dev/null | head -1)" >&2
    grep -E 'ERROR|SUMMARY|#[0-9]+ ' "$work/$name/fuzz.log" | head -30 >&2
    failed=1
  fi
done
if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "fuzz: logs kept in $work" >&2; fi
exit "$failed"
