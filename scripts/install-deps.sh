#!/usr/bin/env bash
# Installs the Debian packages zerotrain builds against; installs only what is missing.
# Idempotent: a machine that has everything runs no apt-get at all.
#   --dev  also the tools that regenerate test fixtures and run the PyTorch side of bench/
#          (python3-torch, python3-numpy, libopenblas0-pthread); neither the build nor the tests need them.
set -euo pipefail

packages=(
  g++ cmake make
  nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev catch2
  libopenmpi-dev openmpi-bin
  libdnnl-dev
)
if [ "${1:-}" = "--dev" ]; then
  packages+=(python3-torch python3-numpy libopenblas0-pthread)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "install-deps: missing ${missing[*]} and not root (no sudo); install them and retry" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
