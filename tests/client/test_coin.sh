#!/bin/sh
# The sliding and spinning coin (client/examples/coin.c) at reduced length:
# two launch ratios, 8-ring disc, integrated to 1e-4 of the initial speed;
# fails unless eps at rest is within 3% of the theory's 0.653.
# usage: test_coin.sh CONTACTD COIN
set -e
CONTACTD=$1
COIN=$2
DIR=$(mktemp -d /tmp/cc-coin-XXXXXX)
"$CONTACTD" --listen none --unix "$DIR/contactd.sock" --workers 2 2> "$DIR/log" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
i=0
while ! grep -q 'msg="ready"' "$DIR/log" 2>/dev/null; do
  i=$((i + 1))
  if [ $i -gt 2000 ]; then echo "contactd did not start"; cat "$DIR/log"; exit 1; fi
  sleep 0.01
done
"$COIN" --addr "unix:$DIR/contactd.sock" --eps0 0.3,3 --hint 0.0015163 --stop 1e-4 --check 0.03
