#!/usr/bin/env bash
# Build and run every test twice: a plain Release build, then a build under
# AddressSanitizer + UndefinedBehaviorSanitizer; then the daemon tests once
# more (with four event loops) against a contactd built under
# ThreadSanitizer, whose exit status fails a test on any report; then a
# short run of each fuzz target. Installs missing packages.
#
# Every file a test writes goes under one directory made for this run
# (mktemp -d -t: under $TMPDIR, else the system default), which the tests
# get as $TMPDIR; it is removed at the end unless CONTACTD_KEEP_TEST_FILES=1.
# Each phase's wall time is printed as it ends, and all of them at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
run_dir=$(mktemp -d -t contactd-tests.XXXXXX)
finish() {
  if [ "${CONTACTD_KEEP_TEST_FILES:-0}" = 1 ]; then
    echo "test files kept in $run_dir"
  else
    rm -rf "$run_dir"
  fi
}
trap finish EXIT
export TMPDIR=$run_dir

phases=()
t_all=$SECONDS
# phase NAME COMMAND...: run it, print its wall time, remember it.
phase() {
  local name=$1 t0=$SECONDS
  shift
  echo "== $name"
  "$@"
  local dt=$((SECONDS - t0))
  printf '== %s: %d s\n' "$name" "$dt"
  phases+=("$(printf '%-44s %5d s' "$name" "$dt")")
}

jobs=$(nproc)
ctest_in() { # DIR [ctest args...]
  local dir=$1
  shift
  (cd "$dir" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure -j"$jobs" "$@")
}
configure_and_build() { # DIR [cmake flags...]
  local dir=$1
  shift
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}

phase "packages" bash deploy/deps.sh
phase "release build" configure_and_build build-test-release -DCMAKE_BUILD_TYPE=Release
phase "release tests" ctest_in build-test-release
phase "sanitize build" configure_and_build build-test-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONTACTD_SANITIZE=ON
phase "sanitize tests" ctest_in build-test-sanitize
tsan_build() {
  cmake -S . -B build-test-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONTACTD_TSAN=ON -DCONTACTD_TESTS=OFF \
    -DCONTACTD_BENCH=OFF >/dev/null
  cmake --build build-test-tsan -j"$jobs" --target contactd
}
phase "tsan build (contactd only)" tsan_build
# the release test programs against contactd under ThreadSanitizer
tsan_tests() {
  CONTACTD_TEST_BIN="$PWD/build-test-tsan/server/daemon/contactd" \
    ctest_in build-test-release -R '^test_daemon_.*_io4$|^test_daemon_loops$' -E faults
}
phase "tsan: daemon tests" tsan_tests
# Coverage-guided fuzz targets (clang, libFuzzer): a short fixed run of each.
phase "libFuzzer smoke" env JOBS="$jobs" bash tests/fuzz/run_libfuzzer.sh 20000

echo "== wall time per phase"
printf '%s\n' "${phases[@]}"
printf '%-44s %5d s\n' "all" "$((SECONDS - t_all))"
