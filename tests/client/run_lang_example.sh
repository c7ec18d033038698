#!/bin/sh
# Build one of the other-language examples in the build tree and run it
# against a real contactd (run_with_daemon.sh):
#   go:   client/go/build.sh, offline over Debian's golang-go and
#         golang-google-protobuf-dev;
#   node: npm ci of client/node/package-lock.json (protobufjs), then
#         client/node/example.js.
# Exit 77 (skipped) when the language's tools are missing.
# usage: run_lang_example.sh go|node SOURCE_DIR BUILD_DIR CONTACTD
set -u
LANG_=$1
SRC=$2
OUT=$3/lang-examples/$1
CONTACTD=$4
mkdir -p "$OUT"
case "$LANG_" in
go)
  command -v go >/dev/null 2>&1 || { echo "go not installed (apt-get install golang-go)"; exit 77; }
  [ -d /usr/share/gocode/src/google.golang.org/protobuf ] ||
    { echo "golang-google-protobuf-dev not installed"; exit 77; }
  sh "$SRC/client/go/build.sh" "$SRC" "$OUT" || exit 1
  PROG="$OUT/contactd-go-example"
  set --
  ;;
node)
  command -v npm >/dev/null 2>&1 || { echo "npm not installed"; exit 77; }
  cp "$SRC/client/node/package.json" "$SRC/client/node/package-lock.json" "$SRC/client/node/example.js" "$OUT/"
  chmod +x "$OUT/example.js"
  if ! cmp -s "$OUT/package-lock.json" "$OUT/node_modules/.package-lock.json.ci" 2>/dev/null; then
    (cd "$OUT" && npm ci --no-audit --no-fund --ignore-scripts >npm.log 2>&1) || { cat "$OUT/npm.log"; exit 1; }
    cp "$OUT/package-lock.json" "$OUT/node_modules/.package-lock.json.ci"
  fi
  PROG="$OUT/example.js"
  set -- --proto "$SRC/proto/contactd.proto"
  ;;
*) echo "unknown example $LANG_"; exit 2 ;;
esac
exec sh "$SRC/tests/client/run_with_daemon.sh" "$CONTACTD" "$PROG" "$@"
