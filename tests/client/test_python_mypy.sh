#!/bin/sh
# mypy --strict on the Python client package (Debian's mypy package); no
# cache written (--cache-dir=/dev/null). Exit 77 (skipped) without mypy.
# usage: test_python_mypy.sh SOURCE_DIR
command -v mypy >/dev/null 2>&1 || { echo "mypy not installed (apt-get install mypy)"; exit 77; }
cd "$1/client/python" || exit 1
exec mypy --strict --cache-dir=/dev/null contactd_client
