#!/bin/sh
# Start contactd on a Unix socket in a fresh directory, run PROGRAM --addr
# unix:SOCKET ARGS..., stop the daemon; exit with the program's status.
# usage: run_with_daemon.sh CONTACTD PROGRAM [ARGS...]
CONTACTD=$1
PROG=$2
shift 2
DIR=$(mktemp -d -t cc-example-XXXXXX) || exit 1
"$CONTACTD" --listen none --unix "$DIR/contactd.sock" --workers 2 2> "$DIR/log" &
PID=$!
i=0
while ! grep -q 'msg="ready"' "$DIR/log" 2>/dev/null; do
  i=$((i + 1))
  if [ $i -gt 2000 ] || ! kill -0 $PID 2>/dev/null; then
    echo "contactd did not start"; cat "$DIR/log"; kill $PID 2>/dev/null; rm -rf "$DIR"; exit 1
  fi
  sleep 0.01
done
"$PROG" --addr "unix:$DIR/contactd.sock" "$@"
RC=$?
kill -TERM $PID
wait $PID
DRC=$?
rm -rf "$DIR"
if [ $DRC -ne 0 ]; then echo "contactd exited with $DRC"; exit 1; fi
exit $RC
