#!/bin/sh
# cmake --install into a temporary prefix, then build a program of one's own
# against the installed library with pkg-config (as a user would) and run
# it against a real daemon; also import the installed Python package.
# usage: test_install.sh BUILD_DIR CONTACTD "EXTRA_CFLAGS"
set -e
BUILD=$1
CONTACTD=$2
EXTRA=$3
PREFIX=$(mktemp -d -t cc-install-XXXXXX)
trap 'rm -rf "$PREFIX"' EXIT
cmake --install "$BUILD" --prefix "$PREFIX" > "$PREFIX/install.log"
LIBDIR=$(dirname "$(find "$PREFIX" -name contactclient.pc | head -1)")
export PKG_CONFIG_PATH="$LIBDIR"
cat > "$PREFIX/hello.c" <<'CEOF'
#include <stdio.h>
#include <cc_client.h>
int main(int argc, char **argv) {
  cc_client *c;
  cc_error e;
  if (cc_connect(argc > 2 ? argv[2] : NULL, NULL, &c, &e)) { fprintf(stderr, "%s\n", e.message); return 1; }
  Contactd__V1__HelloReply *h;
  if (cc_hello(c, "installed", &h, &e)) { fprintf(stderr, "%s\n", e.message); return 1; }
  printf("server %s protocol %u\n", h->server_version, h->protocol_version);
  cc_free(h);
  cc_close(c);
  return 0;
}
CEOF
# shellcheck disable=SC2046
cc $EXTRA -o "$PREFIX/hello" "$PREFIX/hello.c" $(pkg-config --cflags --libs contactclient) -lm
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(/bin/sh "$HERE/run_with_daemon.sh" "$CONTACTD" "$PREFIX/hello")
echo "$OUT"
echo "$OUT" | grep -q "protocol 1"
test -x "$PREFIX/bin/contactctl"
"$PREFIX/bin/contactctl" --version
PYTHONPATH="$PREFIX/share/contactd/python" /usr/bin/python3 -c \
  "import contactd_client as c; print('python client', c.__version__, c.pb.DESCRIPTOR.package)"
