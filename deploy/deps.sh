#!/usr/bin/env bash
# Install the Debian packages contactd needs to build, test and run.
# Idempotent: only missing packages are installed. Needs root (or sudo).
set -euo pipefail
PKGS=(gcc cmake make pkg-config libuv1-dev libprotobuf-c-dev protobuf-c-compiler
      libcjson-dev libcriterion-dev libssl-dev openssl protobuf-compiler python3-protobuf libccd-dev
      chromium libhiredis-dev redis-server redis-tools
      clang-14 clang libclang-rt-14-dev python3-venv python3-pip python3-setuptools python3-wheel
      universal-ctags prometheus libmujoco-dev
      golang-go golang-google-protobuf-dev mypy python3-numpy)
# golang-go and golang-google-protobuf-dev build the Go example offline
# (client/go/build.sh); mypy checks the Python client (mypy --strict);
# python3-numpy is the client's optional array API (tested).
# The viewer: npm fetches three.js at build time and playwright-core for its
# browser tests (both pinned by package-lock.json files); Debian's nodejs and
# npm unless a node with npm is already installed.
command -v npm >/dev/null 2>&1 || PKGS+=(nodejs npm)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
