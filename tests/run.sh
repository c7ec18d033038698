#!/usr/bin/env bash
# Build and run every test twice: a plain Release build, then a build under
# AddressSanitizer + UndefinedBehaviorSanitizer. Installs missing packages.
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
# Coverage-guided fuzz targets (clang, libFuzzer): a short fixed run of each.
echo "== libFuzzer smoke"
JOBS=$jobs bash tests/fuzz/run_libfuzzer.sh 20000
