#!/usr/bin/env bash
# Build contactd (Release) and run it with the embedded defaults:
# in-memory geometry cache, TCP listener on 127.0.0.1:7411. Extra arguments
# go to contactd (try --help). Builds only what a first session uses: the
# daemon, contactctl and the viewer's assets (no tests, no benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCONTACTD_TESTS=OFF -DCONTACTD_BENCH=OFF >/dev/null
cmake --build build -j"$(nproc)" --target contactd contactctl viewer_assets
exec ./build/server/daemon/contactd "$@"
