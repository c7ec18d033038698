#!/usr/bin/env bash
# Install the Debian packages contactd needs to build, test and run.
# Idempotent: only missing packages are installed. Needs root (or sudo).
set -euo pipefail
PKGS=(gcc cmake make pkg-config libuv1-dev libprotobuf-c-dev protobuf-c-compiler
      libcjson-dev libcriterion-dev protobuf-compiler python3-protobuf libccd-dev
      redis-server redis-tools)
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
