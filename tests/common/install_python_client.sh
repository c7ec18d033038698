#!/bin/sh
# Install the Python client into a fresh virtual environment, the way a
# user does (client/python/README.md): Debian's python3 with its
# system site packages (python3-protobuf), pip without build isolation and
# without a package index (CI reaches none).
# usage: install_python_client.sh VENV_DIR
set -e
VENV=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$VENV"
/usr/bin/python3 -m venv --system-site-packages "$VENV"
cd "$ROOT"
PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$VENV/bin/pip" install --quiet --no-build-isolation ./client/python
"$VENV/bin/python" -c "import contactd_client as c; print('contactd_client', c.__version__, 'in', c.__file__)"
