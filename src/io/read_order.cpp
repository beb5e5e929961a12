#include "swp/io/read_order.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace swp::io {

namespace {
struct SplitMix {
  std::uint64_t state;
  std::uint64_t operator()() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) without modulo bias (rejection); std::uniform_int_distribution is
  // not the same on every standard library, and the order must be.
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
    for (;;) {
      const std::uint64_t v = (*this)();
      if (v < limit) return v % bound;
    }
  }
};
}  // namespace

std::vector<RecordRef> epoch_order(std::span<const std::uint64_t> records_per_file,
                                   const OrderOptions& options, std::uint64_t epoch) {
  if (options.world == 0) throw std::invalid_argument("world must be at least 1");
  if (options.rank >= options.world)
    throw std::invalid_argument("rank " + std::to_string(options.rank) + " is not below world " +
                                std::to_string(options.world));
  std::vector<RecordRef> all;
  for (std::uint32_t f = 0; f < records_per_file.size(); ++f)
    for (std::uint64_t r = 0; r < records_per_file[f]; ++r) all.push_back({f, r});
  if (options.shuffle && all.size() > 1) {
    SplitMix rng{options.seed ^ (0xd1b54a32d192ed03ULL * (epoch + 1))};
    for (std::size_t i = all.size() - 1; i > 0; --i) std::swap(all[i], all[rng.below(i + 1)]);
  }
  const std::uint64_t n = all.size();
  const std::uint64_t begin = share_begin(n, options.rank, options.world);
  const std::uint64_t end = share_begin(n, std::uint64_t{options.rank} + 1, options.world);
  return {all.begin() + static_cast<std::ptrdiff_t>(begin),
          all.begin() + static_cast<std::ptrdiff_t>(end)};
}

}  // namespace swp::io
