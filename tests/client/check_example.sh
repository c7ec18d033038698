#!/bin/sh
# Run an example simulator against its own daemon (run_with_daemon.sh) with
# its trajectory written to a temporary CSV, and pass only when the program
# exits 0, prints exactly NCHECKS lines "check ...: ok" and none that fail,
# and the CSV holds its header and at least one row per printed step.
# usage: check_example.sh NCHECKS CONTACTD PROGRAM [ARGS...]
N=$1
shift
DIR=$(mktemp -d -t cc-check-XXXXXX) || exit 1
CONTACTD=$1
PROG=$2
shift 2
/bin/sh "$(dirname "$0")/run_with_daemon.sh" "$CONTACTD" "$PROG" --csv "$DIR/out.csv" "$@" > "$DIR/out" 2>&1
RC=$?
cat "$DIR/out"
OK=$(grep -c '^check .*: ok' "$DIR/out")
BAD=$(grep -c '^check .*: FAIL' "$DIR/out")
ROWS=$(($(wc -l < "$DIR/out.csv" 2>/dev/null || echo 0) - 1))
HEAD=$(head -c 9 "$DIR/out.csv" 2>/dev/null)
rm -rf "$DIR"
echo "exit status $RC; checks ok $OK of $N, failed $BAD; CSV rows $ROWS"
[ "$RC" -eq 0 ] && [ "$OK" -eq "$N" ] && [ "$BAD" -eq 0 ] && [ "$ROWS" -gt 1 ] && [ "$HEAD" = "t,x,y,z,q" ]
