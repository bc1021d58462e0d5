#!/usr/bin/env bash
# Builds the libFuzzer targets in build-fuzz (clang, ASan + UBSan) and, for each target,
#   (a) replays its seed corpus fuzz/corpus/<target>/ once (regression seeds must not crash);
#   (b) fuzzes it for FUZZ_SECONDS (default 20) seconds.
# Prints executions and exec/s per target; exits non-zero if any target crashed, leaked, hit
# UB, ran out of memory or timed out on one input.
#
#   fuzz/run.sh                       # all targets, 20 s each
#   FUZZ_SECONDS=180 fuzz/run.sh quantity policy
#
# New inputs found while fuzzing go to build-fuzz/fuzz-work/<target>/corpus (not into the
# repo); crashing inputs to build-fuzz/fuzz-work/<target>/crash-*. To keep one as a regression
# seed, minimise it (./build-fuzz/fuzz/<target>_fuzz -minimize_crash=1 -runs=10000 FILE) and
# copy it into fuzz/corpus/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
BUILD_DIR="${FUZZ_BUILD_DIR:-build-fuzz}"
ALL_TARGETS=(extender_args admission_review quantity policy kubeconfig pod_mutation dra_selector)
if (($# > 0)); then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi

dict_for() {
  case "$1" in
    quantity) echo fuzz/dict/quantity.dict ;;
    dra_selector) echo fuzz/dict/cel.dict ;;
    policy | kubeconfig) echo fuzz/dict/yaml.dict ;;
    *) echo fuzz/dict/json.dict ;;
  esac
}

# No precompiled headers here: only some libraries are instrumented (fuzz/CMakeLists.txt), so
# one header shared across them would be built with the wrong flags for the others. The
# libraries compile in unity batches, as in the sanitizer builds (CMakeLists.txt).
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  CC="${CC:-clang}" CXX="${CXX:-clang++}" cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DGPU_TENANCY_FUZZ=ON -DBUILD_TESTING=OFF -DBUILD_BENCHMARKS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPU_TENANCY_PCH=OFF -DGPU_TENANCY_UNITY_ROOMS=ON
fi
cmake --build "$BUILD_DIR" --target fuzzers -j2

# Leaks are findings; a UBSan report already aborts (-fno-sanitize-recover).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
COMMON_FLAGS=(-rss_limit_mb=2048 -detect_leaks=1 -timeout=30 -print_final_stats=1)

failed=()
summary=()
for t in "${TARGETS[@]}"; do
  bin="$BUILD_DIR/fuzz/${t}_fuzz"
  seeds="fuzz/corpus/$t"
  work="$BUILD_DIR/fuzz-work/$t"
  [[ -x "$bin" ]] || { echo "no such fuzz target: $t" >&2; exit 2; }
  mkdir -p "$work/corpus"
  log="$work/fuzz.log"
  flags=("${COMMON_FLAGS[@]}" -dict="$(dict_for "$t")" -artifact_prefix="$work/")

  echo "== $t: replaying $(find "$seeds" -type f | wc -l) seeds"
  if ! timeout --kill-after=10 600 "$bin" "${flags[@]}" -runs=0 "$seeds" >"$work/replay.log" 2>&1; then
    echo "!! $t: a seed crashes; tail of $work/replay.log:" >&2
    tail -n 40 "$work/replay.log" >&2
    failed+=("$t (replay)")
    continue
  fi

  echo "== $t: fuzzing for ${FUZZ_SECONDS}s"
  rc=0
  # The outer timeout is a backstop: libFuzzer's own out-of-memory path has been seen to hang
  # (LeakSanitizer's tracer spinning over a 2 GB heap), which would otherwise stall CI.
  timeout --kill-after=10 $((FUZZ_SECONDS + 120)) \
    "$bin" "${flags[@]}" -max_total_time="$FUZZ_SECONDS" "$work/corpus" "$seeds" >"$log" 2>&1 ||
    rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
  corpus=$(find "$work/corpus" -type f | wc -l)
  line=$(printf '%-18s %10s execs %8s exec/s  %5s MB peak  %-10s corpus +%s' "$t" \
    "${execs:-?}" "${rate:-?}" "${rss:-?}" "${cov:-}" "$corpus")
  if ((rc != 0)); then
    echo "!! $t: fuzzer exited $rc; tail of $log:" >&2
    tail -n 60 "$log" >&2
    failed+=("$t")
    line="$line  FAILED (exit $rc)"
  fi
  echo "$line"
  summary+=("$line")
done

echo
echo "== fuzz summary (${FUZZ_SECONDS}s per target)"
printf '%s\n' "${summary[@]}"
if ((${#failed[@]} > 0)); then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
