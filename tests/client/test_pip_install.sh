#!/bin/sh
# The Python client installed with pip into a fresh virtual environment in
# a temporary directory (tests/common/install_python_client.sh), then used
# against a real daemon: the package and its generated contactd_pb2 come
# from the venv, not from the source tree, and a sphere-on-floor query
# answers with a surface.
# usage: test_pip_install.sh CONTACTD
set -e
CONTACTD=$1
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d -t cc-pip-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
/bin/sh "$HERE/../common/install_python_client.sh" "$TMP/venv"
cd "$TMP"
CONTACTD_BIN=$CONTACTD PYTHONPATH="" "$TMP/venv/bin/python" - "$HERE" "$TMP/venv" <<'PYEOF'
import os
import sys

venv = os.path.realpath(sys.argv[2])
import contactd_client
from contactd_client import Body, Client, contactd_pb2

for mod in (contactd_client, contactd_pb2):
    assert os.path.realpath(mod.__file__).startswith(venv + os.sep), mod.__file__

sys.path.insert(0, sys.argv[1])  # the test fixture that starts contactd
from contactd_fixture import Daemon

d = Daemon()
try:
    with Client(d.tcp_addr) as c:
        ball = c.register_sphere(0.05, modulus=1e5, hint=0.01)
        floor = c.register_half_space(rigid=True)
        res = c.query([Body(1, ball, position=(0, 0, 0.045)), Body(2, floor)], pairs=[(1, 2)])
        p = res.pairs[0]
        assert p.status == "surface" and p.force_a[2] > 0, p
        print("installed client: status", p.status, "Fz %.3f N" % p.force_a[2])
finally:
    assert d.stop() == 0, "contactd did not exit 0"
PYEOF
