#!/bin/sh
# Make the certificates the TLS tests use, with the openssl CLI, into DIR
# (made fresh by the test under its $TMPDIR; nothing here is committed):
#   ca.pem ca.key                the test CA
#   server.pem server.key        CN=localhost, SAN localhost and 127.0.0.1, from ca
#   server2.pem server2.key      the same names, another key (for reloads)
#   client.pem client.key        CN=sim-farm, from ca (a client certificate)
#   expired.pem expired.key      CN=old-client, from ca, valid only in 2020
#   rogue-ca.pem rogue.pem rogue.key   CN=sim-farm, from another CA
# usage: make_certs.sh DIR
set -eu
D=$1
mkdir -p "$D"
cd "$D"
q() { "$@" > /dev/null 2>&1 || { echo "make_certs: failed: $*" >&2; "$@"; exit 1; }; }
key() { q openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
ca() { # NAME SUBJECT
  key "$1.key"
  q openssl req -x509 -new -key "$1.key" -subj "$2" -days 30 -out "$1.pem" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() { # NAME SUBJECT CA EXT
  key "$1.key"
  q openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
  printf '%s\n' "$4" > "$1.ext"
  q openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -days 30 \
    -extfile "$1.ext" -out "$1.pem"
  rm -f "$1.csr" "$1.ext"
}
ca ca "/CN=contactd test CA"
ca rogue-ca "/CN=another CA"
leaf server "/CN=localhost" ca "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
leaf server2 "/CN=localhost" ca "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
leaf client "/CN=sim-farm" ca "extendedKeyUsage=clientAuth"
leaf rogue "/CN=sim-farm" rogue-ca "extendedKeyUsage=clientAuth"
# An expired one: `openssl ca` is the CLI that takes explicit dates.
key expired.key
q openssl req -new -key expired.key -subj "/CN=old-client" -out expired.csr
mkdir -p ca-db
: > ca-db/index.txt
echo 1000 > ca-db/serial
cat > ca-db/ca.cnf <<CNF
[ca]
default_ca = test
[test]
database = ca-db/index.txt
serial = ca-db/serial
new_certs_dir = ca-db
default_md = sha256
policy = any
[any]
commonName = supplied
[ext]
extendedKeyUsage = clientAuth
CNF
q openssl ca -batch -config ca-db/ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem \
  -startdate 20200101000000Z -enddate 20200201000000Z -extensions ext -notext
rm -rf ca-db expired.csr ./*.srl
