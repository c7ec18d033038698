#!/bin/sh
# contactctl, the Python client and `openssl s_client` over TLS 1.3 with a
# token from $CONTACTD_TOKEN_FILE, against the real daemon with
# certificates made now (tests/common/make_certs.sh): each answer equals
# the same request's answer in plaintext, and a wrong token is refused
# with an error that says so.
# An example simulator (manysim) runs through the same flags.
# usage: test_tls_clients.sh CONTACTD CONTACTCTL MANYSIM [PYTHON]
# (PYTHON: an interpreter with contactd_client installed; none = skip it)
set -eu
BIN=$1
CTL=$2
SIM=$3
PY=${4:-}
SRC=${CONTACTD_SOURCE_DIR:?CONTACTD_SOURCE_DIR must name the source tree}
T=$(mktemp -d)
PID=
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2> /dev/null || true; wait "$PID" 2> /dev/null || true; fi
  [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
# Answers without their timings (compute_time_us, round_trip_us, ...).
untimed() { sed -E 's/"[A-Za-z_]*([Tt]ime_?[Uu]s|[Tt]rip_?[Uu]s|Us)": ?"?[0-9.e+-]+"?,?//g' "$1"; }
same() { untimed "$1" > "$1.u"; untimed "$2" > "$2.u"; cmp -s "$1.u" "$2.u"; }
fail() {
  echo "FAIL: $*" >&2
  echo "--- contactd log:" >&2
  cat "$T/contactd.log" >&2 || true
  exit 1
}

sh "$SRC/tests/common/make_certs.sh" "$T/certs"
TOKEN=robot-7-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
HASH=$(printf %s "$TOKEN" | openssl dgst -sha256 -r | cut -c1-64)
printf '{"principals": [{"name": "robot-7", "token_sha256": "%s", "roles": ["query", "register", "admin"], "tenant": "lab-a"}]}\n' \
  "$HASH" > "$T/principals.json"
( umask 077; printf '%s\n' "$TOKEN" > "$T/robot-7.token"; printf 'not-the-token\n' > "$T/wrong.token" )
export CONTACTD_TOKEN_FILE="$T/robot-7.token"
unset CONTACTD_TOKEN CONTACTD_ADDR 2> /dev/null || true

# One daemon takes TLS and plaintext on the same port (told apart by the
# first byte), so both answers come from the same server and cache.
"$BIN" --listen 127.0.0.1:0 --workers 2 --tls-cert "$T/certs/server.pem" --tls-key "$T/certs/server.key" \
  --principals "$T/principals.json" --tls-required false > "$T/contactd.log" 2>&1 &
PID=$!
i=0
until grep -q 'msg="ready"' "$T/contactd.log"; do
  i=$((i + 1))
  [ $i -lt 400 ] || fail "contactd did not become ready"
  kill -0 "$PID" 2> /dev/null || fail "contactd exited"
  sleep 0.05
done
PORT=$(sed -n 's/.*msg="listening" tcp=[^ ]* port=\([0-9]*\).*/\1/p' "$T/contactd.log" | head -n 1)
[ -n "$PORT" ] || fail "no port in the log"
ADDR=127.0.0.1:$PORT
CA=$T/certs/ca.pem

# ---- contactctl ---------------------------------------------------------------
SCENE=$SRC/client/examples/scenes/ball_on_floor.json
"$CTL" --addr "$ADDR" --json query "$SCENE" > "$T/ctl.plain" || fail "contactctl query in plaintext"
"$CTL" --addr "$ADDR" --ca "$CA" --json query "$SCENE" > "$T/ctl.tls" || fail "contactctl query over TLS"
"$CTL" --addr "localhost:$PORT" --tls --ca "$CA" --json query "$SCENE" > "$T/ctl.tls2" ||
  fail "contactctl query over TLS by host name"
grep -q '"force"' "$T/ctl.plain" || fail "contactctl printed no force: $(cat "$T/ctl.plain")"
same "$T/ctl.plain" "$T/ctl.tls" || fail "contactctl: TLS and plaintext answers differ"
same "$T/ctl.plain" "$T/ctl.tls2" || fail "contactctl: TLS by host name and plaintext answers differ"
rc=0
"$CTL" --addr "$ADDR" --ca "$CA" --token-file "$T/wrong.token" ping > /dev/null 2> "$T/ctl.err" || rc=$?
[ $rc -eq 1 ] || fail "contactctl with a wrong token exited $rc, want 1"
grep -q 'UNAUTHENTICATED.*wrong.token.*matches no principal' "$T/ctl.err" ||
  fail "contactctl's error does not say the token is wrong: $(cat "$T/ctl.err")"
rc=0
"$CTL" --addr "$ADDR" --ca "$T/certs/rogue-ca.pem" ping > /dev/null 2> "$T/ctl.err" || rc=$?
[ $rc -eq 3 ] || fail "contactctl with an untrusted server certificate exited $rc, want 3"
grep -q 'not trusted' "$T/ctl.err" || fail "contactctl's error does not say why: $(cat "$T/ctl.err")"
echo "ok: contactctl over TLS equals plaintext; a wrong token and an unknown CA are refused"

# ---- openssl s_client: newline-delimited JSON (docs/protocol.md) ---------------
BALL=$("$CTL" --addr "$ADDR" --ca "$CA" register sphere --radius 0.05 --modulus 1e5 --hint 0.01) ||
  fail "register the ball"
FLOOR=$("$CTL" --addr "$ADDR" --ca "$CA" register half-space --rigid) || fail "register the floor"
HELLO='{"requestId":"1","hello":{"protocolVersion":1,"clientName":"s_client","token":"'$TOKEN'"}}'
QUERY='{"requestId":"2","contactQuery":{"bodies":[{"bodyId":1,"geometryId":"'$BALL'","pose":{"position":{"z":0.048}}},{"bodyId":2,"geometryId":"'$FLOOR'"}],"pairs":[{"a":1,"b":2}]}}'
# The plaintext answer, from a plain socket.
/usr/bin/python3 - "$PORT" "$HELLO" "$QUERY" > "$T/json.plain" << 'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
s.sendall((sys.argv[2] + "\n" + sys.argv[3] + "\n").encode())
f = s.makefile()
print(f.readline(), end="")
print(f.readline(), end="")
EOF
# The same lines through s_client; its stdin stays open until both answers are in.
: > "$T/json.tls"
(
  printf '%s\n%s\n' "$HELLO" "$QUERY"
  i=0
  while [ "$(wc -l < "$T/json.tls")" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
) | timeout 30 openssl s_client -quiet -no_ign_eof -connect "$ADDR" -servername localhost -CAfile "$CA" \
  -verify_return_error -tls1_3 > "$T/json.tls" 2> "$T/s_client.err" || true
[ "$(wc -l < "$T/json.tls")" -eq 2 ] || fail "s_client got $(wc -l < "$T/json.tls") lines: $(cat "$T/json.tls" "$T/s_client.err")"
grep -q '"principal":"robot-7"' "$T/json.tls" || fail "s_client's Hello was not authenticated: $(head -n 1 "$T/json.tls")"
grep -q '"contactReply"' "$T/json.tls" || fail "s_client got no ContactReply: $(tail -n 1 "$T/json.tls")"
tail -n 1 "$T/json.plain" > "$T/q.plain"
tail -n 1 "$T/json.tls" > "$T/q.tls"
same "$T/q.plain" "$T/q.tls" || fail "s_client: TLS and plaintext ContactReply differ: $(cat "$T/q.plain" "$T/q.tls")"
echo "ok: openssl s_client (TLS 1.3, JSON) equals plaintext"

# ---- an example simulator: the shared flags (cc_options_flag) ----------------------
"$SIM" --addr "localhost:$PORT" --ca "$CA" --token-file "$CONTACTD_TOKEN_FILE" --clients 2 --steps 20 \
  > "$T/manysim.out" 2>&1 || fail "manysim over TLS: $(cat "$T/manysim.out")"
rc=0
"$SIM" --addr "$ADDR" --tls --ca "$CA" --token-file "$T/wrong.token" --clients 1 --steps 5 > "$T/manysim.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q 'matches no principal' "$T/manysim.out" ||
  fail "manysim with a wrong token: exit $rc, $(cat "$T/manysim.out")"
echo "ok: manysim over TLS with --ca and --token-file"

# ---- the Python client -----------------------------------------------------------
if [ -n "$PY" ]; then
  "$PY" - "$ADDR" "$CA" "$T" "$BALL" "$FLOOR" << 'EOF' || fail "the Python client"
import os, ssl, sys
import contactd_client as cd
addr, ca, tmp, ball, floor = sys.argv[1:6]
port = addr.rsplit(":", 1)[1]
token = open(os.environ["CONTACTD_TOKEN_FILE"]).read().strip()

def query(c):
    r = c.query([cd.Body(1, ball, position=(0, 0, 0.048)), cd.Body(2, floor)], pairs=[(1, 2)])
    p = r.pairs[0]
    return tuple(p.force_a) + tuple(p.torque_a) + (p.area,)

with cd.Client(addr, token=token) as c:
    plain = query(c)
ctx = ssl.create_default_context(cafile=ca)
with cd.Client(addr, tls=ctx, token=token) as c:
    assert c.hello().principal == "robot-7", c.hello()
    over_tls = query(c)
with cd.Client("localhost:" + port, tls=True, tls_ca_file=ca) as c:  # the token from $CONTACTD_TOKEN_FILE
    by_name = query(c)
assert plain[2] > 0, plain
assert plain == over_tls == by_name, (plain, over_tls, by_name)
try:
    cd.Client(addr, tls=ctx, token="not-the-token")
except cd.ContactdError as e:
    assert e.code == cd.pb.UNAUTHENTICATED and e.remote, e
    assert "not-the-token" not in str(e) and "matches no principal" in str(e), e
else:
    raise AssertionError("a wrong token was accepted")
try:
    cd.Client(addr, tls=ssl.create_default_context(cafile=os.path.join(tmp, "certs", "rogue-ca.pem")), token=token)
except cd.ContactdError as e:
    assert e.code == cd.pb.UNAUTHENTICATED and not e.remote and "not trusted" in str(e), e
else:
    raise AssertionError("an untrusted server certificate was accepted")
print("ok: the Python client over TLS equals plaintext; a wrong token is refused")
EOF
fi

# ---- mutual TLS: a client without a certificate is refused, saying so -------------
kill "$PID"
wait "$PID" 2> /dev/null || true
PID=
: > "$T/contactd.log" # now, not in the child: the wait below must not read the last daemon's lines
"$BIN" --listen 127.0.0.1:0 --workers 1 --tls-cert "$T/certs/server.pem" --tls-key "$T/certs/server.key" \
  --tls-client-ca "$CA" --principals "$T/principals.json" > "$T/contactd.log" 2>&1 &
PID=$!
i=0
until grep -q 'msg="ready"' "$T/contactd.log"; do
  i=$((i + 1))
  [ $i -lt 400 ] || fail "contactd (mutual TLS) did not become ready"
  sleep 0.05
done
PORT=$(sed -n 's/.*msg="listening" tcp=[^ ]* port=\([0-9]*\).*/\1/p' "$T/contactd.log" | head -n 1)
rc=0
"$CTL" --addr "127.0.0.1:$PORT" --ca "$CA" ping > /dev/null 2> "$T/ctl.err" || rc=$?
[ $rc -eq 3 ] && grep -q "refused this client's certificate" "$T/ctl.err" ||
  fail "contactctl without a client certificate: exit $rc, $(cat "$T/ctl.err")"
"$CTL" --addr "127.0.0.1:$PORT" --ca "$CA" --cert "$T/certs/client.pem" --key "$T/certs/client.key" ping \
  > /dev/null || fail "contactctl with a client certificate"
echo "ok: contactctl with mutual TLS (refused without a certificate)"
if [ -n "$PY" ]; then
  "$PY" - "127.0.0.1:$PORT" "$CA" "$T" << 'EOF' || fail "the Python client with mutual TLS"
import os, ssl, sys
import contactd_client as cd
addr, ca, tmp = sys.argv[1:4]
try:
    cd.Client(addr, tls=True, tls_ca_file=ca)  # the token file's Hello meets the refusal
except cd.ContactdError as e:
    assert e.code == cd.pb.UNAUTHENTICATED and "refused this client's certificate" in str(e), e
else:
    raise AssertionError("no client certificate, yet accepted")
ctx = ssl.create_default_context(cafile=ca)
ctx.load_cert_chain(os.path.join(tmp, "certs", "client.pem"), os.path.join(tmp, "certs", "client.key"))
with cd.Client(addr, tls=ctx) as c:
    c.hello()
print("ok: the Python client with mutual TLS (refused without a certificate)")
EOF
fi
grep -q "$TOKEN" "$T/contactd.log" && fail "the daemon's log holds the token"
echo "ok: all TLS clients"
