#!/usr/bin/env bash
# The whole test suite, as the README's second command and CI run it:
#   1. installs missing Debian packages (scripts/deps.sh),
#   2. lint: clang-format 14, banned C functions, program files over 900 lines, shellcheck (the
#      layers lint, tests/lint/layers.sh, needs the build: it runs with the unit tests),
#   3. a -Werror build; unit tests (Check), then the same unit tests under valgrind (the binaries
#      side by side, as many at once as there are CPUs),
#   4. the artifact checks (tests/artifacts/: the package, the container image, man pages, metric
#      docs, alert rules, dashboards) on the plain build, with the few integration tests labelled `plain` (the
#      shipped binary serving Prometheus, and rabbitmq_scale's 10,000 queues, a size that is the
#      optimized build's to measure),
#   5. fuzzing: the libFuzzer targets of tests/fuzz (clang, in build-san), two at a time, their
#      saved crash inputs replayed, then each run for QREL_FUZZ_SECONDS (default 6; set it higher
#      to fuzz longer, e.g. QREL_FUZZ_SECONDS=3600),
#   6. the clang ASan+UBSan build running the unit tests again and every integration test against
#      real servers the tests start on loopback (redis-server, RabbitMQ, Prometheus' promtool, ...;
#      the Pub/Sub emulator and fauxqs once for all the tests that use them), in one ctest run.
# Each integration test runs once, and under the sanitizers: they see every path the plain build
# runs, and more (a leak, an overflow, undefined behaviour); the plain build keeps -Werror, the
# unit tests, valgrind and the tests labelled `plain`. Running all of them on both builds took
# half the suite's time for no finding the sanitizer pass would have missed.
# That sanitizer build compiles in the background (nice) while the plain build's tests run,
# and the integration tests run twice as many at once as there are CPUs (QREL_INTEGRATION_JOBS).
# With QREL_FAST=1 (no sanitizer pass) the integration tests run on the plain build instead.
# Ends with the time each stage took and how busy the CPUs were meanwhile, then one line
# "tests: N passed, M failed" (the last line), and exits non-zero when anything failed.
# QREL_SKIP_DEPS=1 skips step 1; QREL_FAST=1 skips the valgrind and sanitizer passes (fuzzing
# and the artifact checks still run: they are short).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
passed=0
failed=0
failures=()

# Stages and their times, for the table at the end: step STAGE TITLE ends the stage running and
# starts STAGE (a short name for the table), with TITLE as its heading.
stage_names=()
stage_secs=()
stage_busy=()
# The CPUs' busy share over a stage, from /proc/stat (user+nice+system+irq+softirq+steal over
# all but iowait and idle): a stage near 100% is CPU-bound and gains only from less work, one well
# below it waits on something and may gain from more running at once. Empty off Linux.
cpu_ticks() { # prints "busy total"
  # guest time (fields 10, 11) is counted in user and nice already.
  awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9 && i <= NF; i++) t += $i; print t - $5 - $6, t }' \
    /proc/stat 2>/dev/null
}
stage_cpu0=''
stage=""
stage_t0=0
end_stage() {
  [ -n "$stage" ] || return 0
  stage_names+=("$stage")
  stage_secs+=($((SECONDS - stage_t0)))
  local b1 t1 b0 t0
  read -r b1 t1 < <(cpu_ticks) || true
  read -r b0 t0 <<<"$stage_cpu0"
  if [ -n "${t1:-}" ] && [ -n "${t0:-}" ] && [ "$t1" -gt "$t0" ]; then
    stage_busy+=("$(((b1 - b0) * 100 / (t1 - t0)))%")
  else
    stage_busy+=("")
  fi
  stage=""
}
step() {
  end_stage
  stage=$1 stage_t0=$SECONDS
  stage_cpu0=$(cpu_ticks)
  shift
  printf '\n==> %s\n' "$*"
}
pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$1"; }
fail() { failed=$((failed + 1)); failures+=("$1"); printf 'FAIL %s\n' "$1"; }
run() { # run NAME CMD...: one counted check
  local name=$1; shift
  if "$@"; then pass "$name"; else fail "$name"; fi
}
# run_parallel PREFIX WIDTH ITEM... -- CMD...: runs `CMD ITEM` for each ITEM, WIDTH at a time,
# each one's output kept aside; then one counted check PREFIX/NAME per ITEM (NAME its basename),
# in the order given: a pass shows its last line, a failure its whole output.
run_parallel() {
  local prefix=$1 width=$2 dir item name done_pid i items=() pids=()
  shift 2
  while [ "$1" != -- ]; do items+=("$1"); shift; done
  shift
  dir=$(mktemp -d)
  # Only its own jobs are waited for: the background build and the artifact checks are this
  # shell's children too, and a bare wait would hold the stage until they end.
  for item in "${items[@]}"; do
    if [ "${#pids[@]}" -ge "$width" ]; then
      wait -n -p done_pid "${pids[@]}"
      for i in "${!pids[@]}"; do [ "${pids[$i]}" != "$done_pid" ] || unset "pids[$i]"; done
      pids=("${pids[@]}")
    fi
    name=$(basename "$item")
    ( "$@" "$item" >"$dir/$name.log" 2>&1; echo $? >"$dir/$name.rc" ) &
    pids+=("$!")
  done
  [ "${#pids[@]}" -eq 0 ] || wait "${pids[@]}"
  for item in "${items[@]}"; do
    name=$(basename "$item")
    if [ "$(cat "$dir/$name.rc" 2>/dev/null)" = 0 ]; then
      tail -1 "$dir/$name.log"
      pass "$prefix/$name"
    else
      cat "$dir/$name.log"
      fail "$prefix/$name"
    fi
  done
  rm -rf "$dir"
}

if [ "${QREL_SKIP_DEPS:-0}" != 1 ]; then
  step deps "dependencies"
  bash scripts/deps.sh || { echo "cannot install dependencies" >&2; exit 1; }
fi

step lint "lint"
mapfile -t csrc < <(git ls-files '*.c' '*.h' 2>/dev/null || find exporter collectors tests -name '*.[ch]')
run lint/clang-format clang-format-14 --dry-run --Werror "${csrc[@]}"
run lint/banned-functions bash tests/lint/banned.sh "${csrc[@]}"
run lint/file-sizes bash tests/lint/sizes.sh "${csrc[@]}"
mapfile -t shsrc < <(git ls-files '*.sh' '.ci/run' 2>/dev/null)
# The shell lint in $jobs processes, the files split between them (one process took 13 s here).
shellcheck_all() {
  printf '%s\0' "$@" | xargs -0 -P "$jobs" -n $((($# + jobs - 1) / jobs)) shellcheck -S warning
}
run lint/shellcheck shellcheck_all "${shsrc[@]}"

# ctest_count LOG LABEL PREFIX: one counted check per test in the ctest output LOG, and a failure
# when ctest did not get as far as its summary.
ctest_count() {
  local log=$1 label=$2 prefix=$3 name result
  while read -r name result; do
    if [ "$result" = Passed ]; then pass "$prefix$name"; else fail "$prefix$name"; fi
  done < <(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.+\**( +)?([A-Za-z]+).*/\1 \3/p' "$log")
  if ! grep -q "tests passed" "$log"; then fail "$prefix$label (ctest did not run)"; fi
}
ctest_pass() { # ctest_pass BUILD_DIR LABEL PREFIX [WIDTH [CTEST_OPTION...]]: runs ctest, counts each test
  local dir=$1 label=$2 prefix=$3 width=${4:-$jobs} log
  shift $(($# < 4 ? $# : 4))
  log=$(mktemp)
  (cd "$dir" && ctest -L "$label" "$@" --output-on-failure -j "$width" 2>&1) | tee "$log"
  ctest_count "$log" "$label" "$prefix"
  rm -f "$log"
}

# One sanitizer build, build-san, serves both the fuzzing and the ASan+UBSan pass: clang with
# ASan and UBSan (clang's UBSan also checks float-to-integer overflow, which gcc's -fsanitize=undefined
# leaves out) and libFuzzer's coverage hooks (QREL_FUZZ). It is compiled in the background, at a
# lower priority, while the plain build's tests run: those mostly wait on the servers they start,
# and a second sanitizer build took as much CPU as the valgrind pass. Its debug information is
# line tables only (-g1): what the sanitizers' reports need (function, file and line), for less
# compile time than full -g, in a suite whose every stage keeps both CPUs busy.
side_builds() {
  local targets=()
  # QREL_FAST=1 runs no sanitizer pass: only the fuzz targets are needed then.
  [ "${QREL_FAST:-0}" = 1 ] && targets=(--target "${fuzz_targets[@]}")
  nice -n 10 cmake -S . -B build-san "${gen_san[@]}" -DCMAKE_C_COMPILER=clang -DQREL_FUZZ=ON -DQREL_SANITIZE=ON \
    -DQREL_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
    >"$side/san.log" 2>&1 &&
    nice -n 10 cmake --build build-san -j "$jobs" "${targets[@]}" >>"$side/san.log" 2>&1
  echo $? >"$side/san.rc"
}
# side_built: waits until the background build is done; 0 when it built.
side_built() {
  local t0=$SECONDS
  while [ ! -f "$side/san.rc" ] && kill -0 "$side_pid" 2>/dev/null; do sleep 1; done
  [ $((SECONDS - t0)) -eq 0 ] || echo "waited $((SECONDS - t0)) s for the sanitizer build (build-san)"
  [ "$(cat "$side/san.rc" 2>/dev/null)" = 0 ] && return 0
  tail -30 "$side/san.log"
  return 1
}
fuzz_targets=(fuzz_config fuzz_accept fuzz_promtext fuzz_json fuzz_redis fuzz_beanstalk
  fuzz_beanstalk_split fuzz_flags fuzz_dlq_report fuzz_activemq fuzz_laravel)
# The suite's fuzzing is a short smoke run of each target (the whole suite is CPU-bound: every
# second here is a second of it): eleven at 6 s, two at a time. Longer runs are on demand
# (tests/fuzz/run.sh, QREL_FUZZ_SECONDS).
export QREL_FUZZ_SECONDS=${QREL_FUZZ_SECONDS:-6}
side=$(mktemp -d)
# The integration tests run wider than the CPU count: each spends most of its time waiting for a
# server to start or a lease to pass, and every one of them passes with two CPU hogs beside it.
integration_jobs=${QREL_INTEGRATION_JOBS:-$((jobs * 2))}

# Ninja for a new build directory where it is installed (scripts/deps.sh installs it; a directory
# keeps the generator it was made with), and LLVM's linker. Measured here: a fresh build in 42 s
# against make's 68 s (77 CPU seconds against 127), the package target's up-to-date check in 0.1 s
# against 8.5 s, and linking the 48 programs in 12 CPU seconds against GNU ld's 30.
generator_for() { # generator_for DIR: the cmake options, one a line
  if [ ! -f "$1/CMakeCache.txt" ] && command -v ninja >/dev/null; then printf '%s\n' -G Ninja; fi
  if command -v ld.lld >/dev/null; then echo -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld; fi
}
mapfile -t gen < <(generator_for build)
mapfile -t gen_san < <(generator_for build-san)

step build "build (-Werror)"
if cmake -S . -B build "${gen[@]}" -DQREL_WERROR=ON >/dev/null && cmake --build build -j "$jobs" >/dev/null; then
  pass build
  side_builds &
  side_pid=$!
  step unit "unit tests"
  ctest_pass build unit ""
  if [ "${QREL_FAST:-0}" != 1 ]; then
    step valgrind "unit tests under valgrind ($jobs at a time)"
    # The slowest first, so the last to finish is a short one (valgrind CPU seconds: check_metrics
    # 27, check_config 11, check_expfmt 28, check_hashtab 5, the rest 1 to 3).
    slow=(check_metrics check_expfmt check_config check_hashtab)
    unit_bins=("${slow[@]/#/build/tests/}")
    for b in build/tests/check_*; do
      [[ " ${slow[*]} " == *" ${b##*/} "* ]] || unit_bins+=("$b")
    done
    run_parallel valgrind "$jobs" "${unit_bins[@]}" -- env CK_FORK=no QREL_UNDER_VALGRIND=1 valgrind -q \
      --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect
  fi
  if [ "${QREL_FAST:-0}" = 1 ]; then
    step integration "integration tests (real servers on loopback) and the artifact checks, $integration_jobs at a time"
    ctest_pass build 'integration|artifacts' "" "$integration_jobs"
  else
    step artifacts "the artifact checks, and the integration tests labelled plain, on the plain build"
    ctest_pass build 'artifacts|plain' "" "$integration_jobs"
  fi
else
  cmake --build build 2>&1 | tail -30
  fail build
  side_builds &
  side_pid=$!
fi

step fuzz "fuzzing (libFuzzer, $QREL_FUZZ_SECONDS s per target, two at a time)"
if side_built; then
  pass build-san
  run_parallel fuzz 2 "${fuzz_targets[@]}" -- bash tests/fuzz/run.sh build-san
else
  fail build-san
fi

if [ "${QREL_FAST:-0}" != 1 ]; then
  if side_built; then
    # tests/lsan.supp names the third-party libraries whose per-process memory is not ours to free
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
    export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
    # The unit tests' reference comparisons draw a tenth of their values here
    # (tests/unit/support/random_samples.h): the plain pass compares them all.
    export QREL_UNDER_SANITIZER=1
    # One ctest run: the unit tests have no COST, so ctest starts them last, where they fill the
    # end of the run that the last integration tests spend waiting.
    step asan "ASan+UBSan: unit and integration tests ($integration_jobs at a time)"
    # rabbitmq_scale (label plain_only) ran on the plain build: its 10,000 queues took 52 s of
    # CPU here, most of it the broker's, and rabbitmq.sh walks the same code under the sanitizers.
    ctest_pass build-san 'unit|integration' "asan/" "$integration_jobs" -LE plain_only
  fi
fi
wait
rm -rf "$side"

end_stage
echo
echo "stage times (and the CPUs' busy share):"
total=0
for i in "${!stage_names[@]}"; do
  printf '  %-18s %3d:%02d  %4s\n' "${stage_names[$i]}" $((stage_secs[i] / 60)) \
    $((stage_secs[i] % 60)) "${stage_busy[$i]}"
  total=$((total + stage_secs[i]))
done
printf '  %-18s %3d:%02d\n' total $((total / 60)) $((total % 60))
if [ ${#failures[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failures[@]}"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
