#!/usr/bin/env bash
# Build contactd (Release) and run it with the embedded defaults:
# in-memory geometry cache, TCP listener on 127.0.0.1:7411. Extra arguments
# go to contactd (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
exec ./build/server/daemon/contactd "$@"
