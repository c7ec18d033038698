#!/usr/bin/env bash
# Build and run every test twice: a plain Release build, then a build under
# AddressSanitizer + UndefinedBehaviorSanitizer; then the daemon tests once
# more (with four event loops) against a contactd built under
# ThreadSanitizer, whose exit status fails a test on any report.
# Installs missing packages.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/deps.sh
jobs=$(nproc)
for variant in release sanitize; do
  dir=build-test-$variant
  if [ $variant = sanitize ]; then
    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONTACTD_SANITIZE=ON)
  else
    flags=(-DCMAKE_BUILD_TYPE=Release)
  fi
  echo "== $variant build"
  cmake -S . -B "$dir" "${flags[@]}" >/dev/null
  cmake --build "$dir" -j"$jobs"
  echo "== $variant tests"
  (cd "$dir" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure -j"$jobs")
done
echo "== tsan build (contactd only)"
cmake -S . -B build-test-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONTACTD_TSAN=ON -DCONTACTD_TESTS=OFF \
  -DCONTACTD_BENCH=OFF >/dev/null
cmake --build build-test-tsan -j"$jobs" --target contactd
echo "== tsan: daemon tests (release test programs, contactd under ThreadSanitizer)"
(cd build-test-release && CONTACTD_TEST_BIN="$PWD/../build-test-tsan/server/daemon/contactd" \
   ctest --output-on-failure -j"$jobs" -R '^test_daemon_.*_io4$|^test_daemon_loops$' -E faults)
# Coverage-guided fuzz targets (clang, libFuzzer): a short fixed run of each.
echo "== libFuzzer smoke"
JOBS=$jobs bash tests/fuzz/run_libfuzzer.sh 20000
