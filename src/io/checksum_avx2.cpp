// XXH3-64 compiled for AVX2 (about twice the SSE2 speed of Debian's libxxhash build), chosen at
// run time by checksum.cpp where the CPU has AVX2. The same function, so the same values: the
// format does not depend on it. Only C headers here: nothing inline from C++ headers compiled
// with -mavx2 can be merged into code that runs on CPUs without it.

#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

namespace swp::io::detail {

uint64_t xxh3_avx2(const void* data, size_t size) noexcept { return XXH3_64bits(data, size); }

}  // namespace swp::io::detail
