#!/usr/bin/env bash
# Build a self-contained benchmark kit in devkit/ (at the repository root) for
# a machine where nothing can be installed: Release contactd and
# bench_throughput, redis-server and redis-benchmark, every shared library
# they load (as ldd lists them) and the dynamic loader, plus devkit/run.sh,
# which runs everything through that loader:
#   - 2-body wrench queries/s, p50, p99 at 1, 8, 32, 64, 128, 1000 clients
#     for io_threads 1, 2, 4, 8, 12, 16 (2 s per cell);
#   - the 500-body scene with 1 and 12 workers;
#   - redis-benchmark -t ping_mbulk -c 32 against redis-server, the reference.
# run.sh prints to stdout and writes the same to $OUT/results.txt (OUT
# defaults to the kit's folder). The whole run takes about 2-3 minutes on 16
# cores. Usage: bash bench/device_kit.sh   (then copy devkit/ and run
# devkit/run.sh from anywhere).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kit="$root/devkit"
build="$root/build-kit"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCONTACTD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target contactd bench_throughput >/dev/null
rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib"
cp "$build/server/daemon/contactd" "$build/bench/bench_throughput" "$kit/bin/"
tools=()
for t in redis-server redis-benchmark; do
  p="$(command -v "$t" || true)"
  if [ -n "$p" ]; then
    cp -L "$p" "$kit/bin/$t.real"
    tools+=("$t")
  else
    echo "device_kit: $t not found: the kit runs without the redis reference" >&2
  fi
done
# every library the binaries load, and the loader itself
for b in "$kit"/bin/*; do
  ldd "$b" | awk '/=> \//{print $3} /^\s*\/[^ ]*ld-linux/{print $1}' | while read -r lib; do
    cp -Ln "$lib" "$kit/lib/" 2>/dev/null || true
  done
done
loader="$(ldd "$kit/bin/contactd" | awk '/ld-linux/{print ($3 ~ /^\//) ? $3 : $1}' | head -1)"
cp -L "$loader" "$kit/lib/ld-linux-x86-64.so.2"
# wrappers: each binary runs through the kit's loader and libraries, so the
# benchmark can start the daemon and redis by path
wrap() { # name real
  cat >"$kit/bin/$1" <<EOF
#!/bin/sh
d="\${0%/*}/.."
exec "\$d/lib/ld-linux-x86-64.so.2" --library-path "\$d/lib" "\$d/bin/$2" "\$@"
EOF
  chmod +x "$kit/bin/$1"
}
mv "$kit/bin/contactd" "$kit/bin/contactd.real"
wrap contactd contactd.real
for t in "${tools[@]}"; do wrap "$t" "$t.real"; done
cat >"$kit/run.sh" <<'EOF'
#!/bin/sh
# contactd throughput kit: run from anywhere; results on stdout and in
# $OUT/results.txt (OUT defaults to this folder).
set -e
d="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$d}"
mkdir -p "$out"
cd "$d"
{
  echo "== contactd device kit, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -m), $(nproc) cores"
  grep -m1 "model name" /proc/cpuinfo || true
  echo "== throughput (2-body wrench queries) and the redis PING reference"
  ./lib/ld-linux-x86-64.so.2 --library-path ./lib ./bin/bench_throughput --daemon "$d/bin/contactd" \
    --redis-server "$d/bin/redis-server" --redis-benchmark "$d/bin/redis-benchmark" \
    --io-threads 1,2,4,8,12,16 --clients 1,8,32,64,128,1000 --seconds 2 --scene 1,12
  echo "== done $(date -u +%H:%M:%SZ)"
} 2>&1 | tee "$out/results.txt"
EOF
chmod +x "$kit/run.sh"
echo "device_kit: $kit ready ($(du -sh "$kit" | cut -f1)); run: $kit/run.sh (OUT=dir for results.txt)"
