#!/usr/bin/env bash
# Build the libFuzzer targets (tests/fuzz/targets) with clang in their own
# build directory, write their seed corpora, and run each target for a
# fixed number of executions. Any crash, sanitizer report, leak or timeout
# fails the script and leaves the input in $BUILD/fuzz-artifacts/.
#
#   tests/fuzz/run_libfuzzer.sh [RUNS [TARGET...]]
#
# RUNS defaults to 20000 per target (the CI smoke run, well under a minute
# in all); TARGET defaults to all seven. tests/fuzz/README.md shows long runs.
# BUILD (default build-fuzz) and JOBS (default nproc) may be set.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-20000}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_mesh_parse fuzz_frame fuzz_json fuzz_scene fuzz_heightfield fuzz_convex fuzz_principals)
build=${BUILD:-build-fuzz}
jobs=${JOBS:-$(nproc)}

CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONTACTD_FUZZ=ON \
  -DCONTACTD_BENCH=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target fuzz_targets

seeds=$build/fuzz-seeds
rm -rf "$seeds"
# The request seeds come from the Python client's builders, installed as a
# user installs it.
sh tests/common/install_python_client.sh "$build/pyvenv" >/dev/null
"$build/pyvenv/bin/python" tests/fuzz/make_corpora.py "$seeds"

mkdir -p "$build/fuzz-artifacts"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in "${targets[@]}"; do
  corpus=$build/fuzz-corpus/$t
  mkdir -p "$corpus"
  echo "== $t: $runs runs"
  log=$build/fuzz-artifacts/$t.log
  if ! "$build/tests/fuzz/targets/$t" -runs="$runs" -seed=1 -timeout=30 -rss_limit_mb=2048 \
      -artifact_prefix="$build/fuzz-artifacts/$t-" "$corpus" "$seeds/$t" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "FAIL: $t (input in $build/fuzz-artifacts/, log $log)"
    exit 1
  fi
  grep -E "^Done" "$log" || true
done
echo "== libFuzzer targets: all passed"
