#!/usr/bin/env bash
# Packaging check: installs a configured swp build into a temporary staging root and builds
# out-of-tree programs against it, the two ways docs/building.md documents — meson's
# `dependency('swp')` and `g++ $(pkg-config --cflags --libs swp)` — then runs them: a CPU-only
# one on the core (`swp`), and one per backend library installed (`swp-cuda`, `swp-nccl`,
# `swp-mpi`). pkg-config sees only the staged swp*.pc files (PKG_CONFIG_LIBDIR): no system
# .pc file (liburing, libxxhash, Open MPI) may be needed to use swp.
#
#   tools/consumer-build.sh [BUILD]      BUILD: a configured meson build dir (default build);
#                                        `meson install` builds what is out of date first
#   KEEP=DIR tools/consumer-build.sh     keep the staging root and the consumer in DIR
#
# Checks, each failing with one `error:` line:
#   - libswp has a versioned SONAME (libswp.so.N), and the consumers load the staged one;
#   - libswp links no backend's runtime (libcudart, libnccl, libmpi); each backend config.hpp
#     says is compiled in is a library of its own, libswp-NAME.so.N, linking its runtime
#     (cuda: libcudart, nccl: libnccl, mpi: libmpi), with its swp-NAME.pc; a backend not
#     compiled in installs neither;
#   - `pkg-config --cflags --libs swp` works with no other .pc file in sight and gives only the
#     include directory and -lswp (no macro, no backend's include path); `--static` works too;
#   - every public header is installed, and no other: include/swp/**.hpp minus detail/ (which
#     public headers include, installed but not for users) and minus the headers of optional
#     components that config.hpp says are not compiled in (a header in a folder named cuda,
#     nccl, mpi or torch belongs to that component; one not compiled in must not install its
#     headers; a component config.hpp does not name installs them as they are);
#   - each of those headers compiles on its own with the installed package's flags (its
#     component's swp-NAME.pc where there is one; the consumer includes them all in one file,
#     where one header's includes hide another's missing ones, as the library's unity chunks
#     do);
#   - the consumer (tests/consumer/consumer.cpp) includes all those headers in one file, uses
#     swp::blocking, runs a data-flow and a clock pipeline, finds only the host and sim
#     backends (asking for cuda names the library to link), and exits 0; `ldd` of it (printed)
#     shows no backend library (libswp-*, libcuda*, libnccl, libnvToolsExt, libmpi*,
#     libopen-pal, libopen-rte);
#   - each backend's consumer (tests/consumer/consumer_NAME.cpp), built through swp-NAME with
#     -Wl,--as-needed, loads libswp-NAME and runs (the MPI one under mpirun with 2 ranks
#     where there is one);
#   - where cuda is installed, a program selecting it by name only (consumer_cuda_by_name.cpp:
#     no symbol of libswp-cuda used) keeps libswp-cuda under --as-needed through swp-cuda's
#     flags, both ways, and finds the backend registered; the same program linked with a bare
#     -lswp-cuda loses it (so the check can fail).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
[[ "$build" = /* ]] || build="$PWD/$build"
fail() {
  echo "error: consumer build: $*" >&2
  exit 1
}
[[ -f "$build/build.ninja" ]] || fail "'$build' is not a configured meson build dir"

work="${KEEP:-}"
if [[ -z "$work" ]]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
stage="$work/stage"
rm -rf "$stage" "$work/consumer" "$work/consumer-build" "$work/pkgconfig"

meson install -C "$build" --destdir "$stage" --skip-subprojects --quiet

# Where meson put things: prefix, libdir and includedir as configured (libdir and includedir
# may be relative to the prefix).
read -r prefix libdir includedir < <(meson introspect "$build" --buildoptions | python3 -c '
import json, sys
opts = {o["name"]: o["value"] for o in json.load(sys.stdin)}
print(opts["prefix"], opts["libdir"], opts["includedir"])')
under_prefix() { [[ "$1" = /* ]] && echo "$stage$1" || echo "$stage$prefix/$1"; }
lib="$(under_prefix "$libdir")"
inc="$(under_prefix "$includedir")"

# Versioned SONAME: programs record libswp.so.N, not the unversioned development link.
soname="$(readelf -d "$lib/libswp.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[[ "$soname" =~ ^libswp\.so\.[0-9]+$ ]] ||
  fail "libswp.so has SONAME '${soname:-none}', expected libswp.so.N (meson soversion)"
[[ -e "$lib/$soname" ]] || fail "$soname is not installed in $lib"

# The public headers the source tree has, minus detail/ and backends not compiled in.
config="$inc/swp/config.hpp"
[[ -f "$config" ]] || fail "swp/config.hpp is not installed"
compiled() {  # compiled cuda -> 0 or 1, from the installed config.hpp
  local flag
  flag="$(sed -n "s/^#define SWP_HAVE_${1^^} \([01]\).*/\1/p" "$config")"
  # A component config.hpp does not name (yet) installs its headers as they are.
  echo "${flag:-1}"
}
# The optional components, each with its headers in a folder of its name (swp/device/cuda/,
# swp/comm/nccl/, swp/comm/mpi/, swp/torch/): the backends and the integrations. NVTX has no
# headers of its own (swp/device/nvtx_ranges.hpp is the core's, installed always).
components=(cuda nccl mpi torch)
expected="$work/expected-headers"
(cd "$root/include" && find swp -name '*.hpp' -not -path '*/detail/*' | sort) |
  while read -r h; do
    keep=1
    for component in "${components[@]}"; do
      if [[ "$h" == *"/$component/"* && "$(compiled "$component")" == 0 ]]; then keep=0; fi
    done
    if [[ $keep == 1 ]]; then echo "$h"; fi
  done > "$expected"
echo "swp/config.hpp" >> "$expected"
sort -o "$expected" "$expected"
(cd "$inc" && find swp -name '*.hpp' -not -path '*/detail/*' | sort) > "$work/installed-headers"
if ! diff -u "$expected" "$work/installed-headers" > "$work/headers.diff"; then
  cat "$work/headers.diff" >&2
  fail "installed public headers differ from include/swp (- missing, + unexpected)"
fi

# The core links no backend's runtime; each backend compiled in is a library of its own.
needed_by() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
backend_runtimes='^lib(cuda|nccl|nvToolsExt|mpi|open-pal|open-rte|swp-)'
if leaked="$(needed_by "$lib/libswp.so" | grep -E "$backend_runtimes")"; then
  fail "libswp links a backend's library: $(echo "$leaked" | tr '\n' ' ')(each backend has its own libswp-NAME)"
fi
backends=()
for pair in cuda:libcudart nccl:libnccl mpi:libmpi; do
  backend="${pair%%:*}"
  runtime="${pair#*:}"
  if [[ "$(compiled "$backend")" == 0 ]]; then
    [[ ! -e "$lib/libswp-$backend.so" && ! -e "$lib/pkgconfig/swp-$backend.pc" ]] ||
      fail "SWP_HAVE_${backend^^} is 0, but libswp-$backend or swp-$backend.pc is installed"
    continue
  fi
  backends+=("$backend")
  [[ -e "$lib/libswp-$backend.so" ]] ||
    fail "config.hpp says SWP_HAVE_${backend^^} 1, but libswp-$backend.so is not installed in $lib"
  soname="$(readelf -d "$lib/libswp-$backend.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
  [[ "$soname" =~ ^libswp-$backend\.so\.[0-9]+$ && -e "$lib/$soname" ]] ||
    fail "libswp-$backend.so has SONAME '${soname:-none}', expected an installed libswp-$backend.so.N"
  needed_by "$lib/libswp-$backend.so" | grep -q "^$runtime" ||
    fail "libswp-$backend does not link $runtime"
  [[ -f "$lib/pkgconfig/swp-$backend.pc" ]] || fail "swp-$backend.pc is not installed in $lib/pkgconfig"
done

# The consumer, out of the source tree (its include list follows once pkg-config is set up).
cp -r "$root/tests/consumer" "$work/consumer"

# The .pc files name the configured prefix; the staged copies point at the staging root
# instead. pkg-config sees them alone (PKG_CONFIG_LIBDIR replaces its default search path): a
# consumer of swp must not need liburing's, libxxhash's or Open MPI's development files.
mkdir -p "$work/pkgconfig"
[[ -f "$lib/pkgconfig/swp.pc" ]] || fail "swp.pc is not installed in $lib/pkgconfig"
for pc in "$lib"/pkgconfig/swp*.pc; do
  sed "s|^prefix=.*|prefix=$stage$prefix|" "$pc" > "$work/pkgconfig/$(basename "$pc")"
done
export PKG_CONFIG_LIBDIR="$work/pkgconfig"
unset PKG_CONFIG_PATH

echo "== pkg-config --cflags --libs swp, no other .pc file in sight"
pc_flags="$(pkg-config --cflags --libs swp 2>&1)" ||
  fail "pkg-config --cflags --libs swp failed without the system's .pc files: $pc_flags"
echo "$pc_flags"
for flag in $pc_flags; do
  case "$flag" in
    "-I$inc" | "-L$lib" | -lswp) ;;
    *) fail "pkg-config --cflags --libs swp gives '$flag': only -I$inc, -L$lib and -lswp belong there" ;;
  esac
done
# Static linking lists libswp's own dependencies (Libs.private) without their .pc files.
pc_static="$(pkg-config --libs --static swp 2>&1)" ||
  fail "pkg-config --libs --static swp failed without the system's .pc files: $pc_static"

# Each header with its own package's flags: swp-NAME's for a header of a component that has its
# own .pc file (an integration whose headers include a third party's, e.g. LibTorch's), swp's
# otherwise. The CPU-only consumer includes those that need nothing beyond swp's flags: all of
# them, today.
cflags="$(pkg-config --cflags swp)"
header_cflags() {
  local component
  for component in "${components[@]}"; do
    if [[ "$1" == *"/$component/"* && -f "$work/pkgconfig/swp-$component.pc" ]]; then
      pkg-config --cflags "swp-$component"
      return
    fi
  done
  echo "$cflags"
}
: > "$work/header-flags"
while read -r h; do
  echo "$h|$(header_cflags "$h")" >> "$work/header-flags"
done < "$expected"
{
  echo "// Every public header of the installed swp that \`pkg-config swp\` compiles (generated by"
  echo "// tools/consumer-build.sh)."
  echo "#pragma once"
  while IFS='|' read -r h flags; do
    if [[ "$(echo "$flags" | xargs)" == "$(echo "$cflags" | xargs)" ]]; then echo "#include <$h>"; fi
  done < "$work/header-flags"
} > "$work/consumer/public_headers.hpp"

echo "== consumer: each public header on its own"
# One compiler run per header (syntax only), as many at once as there are cores; a header
# that fails is named with the compiler's first lines.
mkdir -p "$work/headers"
export work
xargs -P "$(nproc)" -d '\n' -I{} bash -c '
  h="${1%%|*}"
  flags="${1#*|}"
  log="$work/headers/$(echo "$h" | tr / _).log"
  # shellcheck disable=SC2086  # flags is a list of words
  echo "#include <$h>" | g++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only $flags -x c++ - \
    > "$log" 2>&1 || echo "$h" >> "$work/headers/failed"
' _ {} < "$work/header-flags"
if [[ -s "$work/headers/failed" ]]; then
  while read -r h; do
    echo "--- $h" >&2
    head -n 20 "$work/headers/$(echo "$h" | tr / _).log" >&2
  done < <(sort "$work/headers/failed")
  fail "$(wc -l < "$work/headers/failed") public header(s) do not compile on their own: \
$(sort "$work/headers/failed" | tr '\n' ' ')"
fi

loads_from_stage() {  # loads_from_stage EXE HOW LIBRARY: EXE loads the staged LIBRARY
  local resolved
  resolved="$(LD_LIBRARY_PATH="$lib" ldd "$1" | sed -n "s/^\s*$3\.so[^ ]* => \([^ ]*\).*/\1/p")"
  [[ "$resolved" == "$lib/"* ]] || fail "$2: the consumer loads $3 from '${resolved:-nowhere}', not $lib"
}

run_consumer() {  # run_consumer EXE HOW: the CPU-only consumer, which loads no backend
  local exe=$1 how=$2 leaked
  loads_from_stage "$exe" "$how" libswp
  echo "ldd of the CPU-only consumer ($how):"
  LD_LIBRARY_PATH="$lib" ldd "$exe" | sed 's/ (0x[0-9a-f]*)$//'
  if leaked="$(LD_LIBRARY_PATH="$lib" ldd "$exe" | awk '{ print $1 }' | grep -E "$backend_runtimes")"; then
    fail "$how: a CPU-only consumer loads $(echo "$leaked" | tr '\n' ' ')"
  fi
  LD_LIBRARY_PATH="$lib" "$exe" || fail "$how: the consumer failed (exit $?)"
}

run_backend_consumer() {  # run_backend_consumer EXE HOW BACKEND
  local exe=$1 how=$2 backend=$3
  loads_from_stage "$exe" "$how" "libswp-$backend"
  if [[ "$backend" == mpi ]] && command -v mpirun > /dev/null; then
    # Two ranks, oversubscribed (CI has 2 cores), also where CI runs as root.
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LD_LIBRARY_PATH="$lib" \
      timeout 120 mpirun --oversubscribe -np 2 "$exe" || fail "$how: the $backend consumer failed under mpirun (exit $?)"
  else
    LD_LIBRARY_PATH="$lib" timeout 120 "$exe" || fail "$how: the $backend consumer failed (exit $?)"
  fi
}

echo "== consumer: meson dependency('swp')"
backend_list="$(IFS=,; echo "${backends[*]}")"
meson setup "$work/consumer-build" "$work/consumer" -Dbackends="$backend_list" \
  > "$work/meson-setup.log" 2>&1 || {
  cat "$work/meson-setup.log" >&2
  fail "meson setup of the consumer failed"
}
ninja -C "$work/consumer-build" > "$work/ninja.log" 2>&1 || {
  cat "$work/ninja.log" >&2
  fail "the meson consumer does not build"
}
run_consumer "$work/consumer-build/swp-consumer" "meson"
for backend in "${backends[@]}"; do
  run_backend_consumer "$work/consumer-build/swp-consumer-$backend" "meson swp-$backend" "$backend"
done
if [[ " ${backends[*]} " == *" cuda "* ]]; then
  run_backend_consumer "$work/consumer-build/swp-consumer-cuda-by-name" \
    "meson swp-cuda, --as-needed, selected by name only" cuda
fi

echo "== consumer: g++ \$(pkg-config --cflags --libs swp)"
# shellcheck disable=SC2046  # pkg-config's output is a list of words
g++ -std=c++20 -Wall -Wextra -Werror -I"$work/consumer" "$work/consumer/consumer.cpp" \
  -o "$work/consumer-pc" $(pkg-config --cflags --libs swp) ||
  fail "the consumer does not build with g++ \$(pkg-config --cflags --libs swp)"
run_consumer "$work/consumer-pc" "pkg-config"

# A backend's consumer through its own pkg-config name, linked with --as-needed (what some
# toolchains default to): the library must stay linked and its backend registered.
for backend in "${backends[@]}"; do
  echo "== consumer: g++ \$(pkg-config --cflags --libs swp-$backend)"
  # shellcheck disable=SC2046  # pkg-config's output is a list of words
  g++ -std=c++20 -Wall -Wextra -Werror "$work/consumer/consumer_$backend.cpp" \
    -o "$work/consumer-pc-$backend" -Wl,--as-needed $(pkg-config --cflags --libs "swp-$backend") ||
    fail "the $backend consumer does not build with g++ \$(pkg-config --cflags --libs swp-$backend)"
  run_backend_consumer "$work/consumer-pc-$backend" "pkg-config swp-$backend" "$backend"
done

# The cuda backend selected by name only, no symbol of libswp-cuda used: swp-cuda's flags keep
# the library under --as-needed; a bare -lswp-cuda does not, which is what they are for.
if [[ " ${backends[*]} " == *" cuda "* ]]; then
  echo "== consumer: the cuda backend by name only, g++ -Wl,--as-needed \$(pkg-config --libs swp-cuda)"
  by_name="$work/consumer/consumer_cuda_by_name.cpp"
  # shellcheck disable=SC2046  # pkg-config's output is a list of words
  g++ -std=c++20 -Wall -Wextra -Werror "$by_name" -o "$work/consumer-pc-cuda-by-name" \
    -Wl,--as-needed $(pkg-config --cflags --libs swp-cuda) ||
    fail "the by-name cuda consumer does not build with g++ \$(pkg-config --cflags --libs swp-cuda)"
  run_backend_consumer "$work/consumer-pc-cuda-by-name" \
    "pkg-config swp-cuda, --as-needed, selected by name only" cuda
  # shellcheck disable=SC2046  # pkg-config's output is a list of words
  g++ -std=c++20 "$by_name" -o "$work/consumer-bare-cuda-by-name" -Wl,--as-needed \
    $(pkg-config --cflags swp) -L"$lib" -lswp-cuda -lswp ||
    fail "the by-name cuda consumer does not build with a bare -lswp-cuda"
  if LD_LIBRARY_PATH="$lib" ldd "$work/consumer-bare-cuda-by-name" | grep -q 'libswp-cuda'; then
    fail "--as-needed kept a bare -lswp-cuda that no symbol needs: the by-name check above proves nothing with this linker"
  fi
fi
