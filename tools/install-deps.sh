#!/usr/bin/env bash
# Installs the Debian packages swp builds with, only those that are missing.
# Runs `apt-get update` once, and only when something has to be installed.
#
#   tools/install-deps.sh          everything tools/test.sh builds and runs
#   tools/install-deps.sh --core   what the core library and the examples need, no more (the
#                                  quick start: no test framework, benchmarks' peers, MPI,
#                                  clang or LibTorch, a third of the download)
set -euo pipefail

core=(
  g++ meson ninja-build pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-context1.81-dev
  libcli11-dev
  libxxhash-dev liburing-dev
)
packages=("${core[@]}")
if [ "${1:-}" != "--core" ]; then
  packages+=(
    doctest-dev
    libtbb-dev
    libopenmpi-dev openmpi-bin
    clang libclang-rt-14-dev
    libtorch-dev  # LibTorch 1.13 (CPU): include/swp/torch and the DLRM example (examples/dlrm)
  )
fi

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
