#!/usr/bin/env bash
# Installs the Debian packages swp builds with, only those that are missing.
# Runs `apt-get update` once, and only when something has to be installed.
set -euo pipefail

packages=(
  g++ meson ninja-build pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-context1.81-dev
  libcli11-dev doctest-dev
  libxxhash-dev liburing-dev
  libtbb-dev
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev
  libtorch-dev  # LibTorch 1.13 (CPU): include/swp/torch and the DLRM example (examples/dlrm)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
