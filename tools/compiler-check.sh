#!/usr/bin/env bash
# The compilers the docs name (g++ and clang++, docs/building.md), each under AddressSanitizer,
# compile and run against a built libswp:
# - tests/compilers/co_await_temporaries.cpp: the push form's temporary submits (`co_await
#   pipe.submit(Batch{...})`, `swp::async_submit`) lose and double-free nothing; it also checks
#   the compiler for g++ 12's defect with braced aggregate temporaries in co_await;
# - tests/compilers/co_await_while_condition.cpp: the documented forms of a `co_await
#   pipe.next()` loop retire every iteration; it also checks the compiler for g++ 12's defect
#   with a co_await as a while condition.
# Each says whether the compiler has its defect (docs/building.md, "Compiler defects"). Fails
# when any program fails or ASan reports anything.
#   tools/compiler-check.sh [BUILD_DIR]   (default: build; needs its libswp built)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[[ "$build" = /* ]] || build="$PWD/$build"
lib="$build/src"
[ -e "$lib/libswp.so" ] || { echo "error: compiler check: $lib/libswp.so is not built" >&2; exit 1; }
# The flags a consumer of this build gets (swp-uninstalled.pc: include dirs, defines).
cflags=$(PKG_CONFIG_PATH="$build/meson-uninstalled" pkg-config --cflags swp 2>/dev/null ||
  echo "-I$PWD/include -I$build/include")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for cxx in g++ clang++; do
  if ! command -v "$cxx" >/dev/null; then
    echo "error: compiler check: $cxx is not installed (tools/install-deps.sh installs it)" >&2
    exit 1
  fi
  echo "-- $cxx ($($cxx --version | head -1))"
  for program in co_await_temporaries co_await_while_condition; do
    # shellcheck disable=SC2086  # the pkg-config flags are words
    "$cxx" -std=c++20 -O1 -g -fsanitize=address -fno-omit-frame-pointer $cflags \
      "tests/compilers/$program.cpp" -o "$work/$program-$cxx" \
      -L"$lib" -lswp -Wl,-rpath,"$lib" -pthread
    ASAN_OPTIONS=detect_leaks=1 "$work/$program-$cxx" || status=1
  done
done
exit "$status"
