#!/bin/sh
# Run a MuJoCo example against its own daemon (tests/client/run_with_daemon.sh)
# and pass only when it exits 0 and prints exactly NCHECKS lines
# "check ...: ok" and none that fail.
# usage: check_mujoco.sh NCHECKS CONTACTD PROGRAM [ARGS...]
N=$1
shift
OUT=$(/bin/sh "$(dirname "$0")/../run_with_daemon.sh" "$@" 2>&1)
RC=$?
printf '%s\n' "$OUT"
OK=$(printf '%s\n' "$OUT" | grep -c '^check .*: ok')
BAD=$(printf '%s\n' "$OUT" | grep -c '^check .*: FAIL')
echo "exit status $RC; checks ok $OK of $N, failed $BAD"
[ "$RC" -eq 0 ] && [ "$OK" -eq "$N" ] && [ "$BAD" -eq 0 ]
