#pragma once
// FlatPositions: a hash index of positions in a list, stored flat (not for direct use).

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace swp::detail {

/// Positions in a caller's list, indexed by a hash of each entry's key, in one flat array
/// (open addressing, linear probing, at most half full). The table keeps no keys: a probe
/// compares the caller's entries, and only where the stored hash matches. Why flat: the
/// node-based unordered containers it replaces allocated a node per entry and copied the key
/// strings into it, and at 100k entries every insert and look-up became a cache miss or two
/// in scattered nodes, so building a plan of 10x the tasks took 20x the time.
class FlatPositions {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  void clear() noexcept {
    slots_.clear();
    size_ = 0;
  }

  /// The smallest position added with `hash` for which `same(position)` holds, or npos.
  template <class Same>
  [[nodiscard]] std::size_t find(std::uint64_t hash, Same&& same) const {
    std::size_t found = npos;
    if (slots_.empty()) return found;
    // The whole probe sequence (it ends at an empty slot; the table is at most half full):
    // growing re-places entries in slot order, which need not be the order they came in.
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash & mask; slots_[i].position != 0; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.hash == hash && slot.position - 1 < found && same(slot.position - 1))
        found = slot.position - 1;
    }
    return found;
  }

  /// Starts loading the slot where a probe for `hash` begins; the table has slots (`reserve`
  /// or `add` came first). A table of 100k entries is megabytes, and each probe of a new key
  /// is a miss to memory: a caller that knows the keys ahead (resolving a plan's names) issues
  /// the misses of the next keys while it handles this one, so they overlap rather than
  /// follow each other. (No branch around the prefetch: GCC 12 drops a prefetch under one.)
  void prefetch(std::uint64_t hash) const noexcept {
    assert(!slots_.empty());
    __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
  }

  /// Adds `position` under `hash` (where another position has an equal key, find gives the
  /// smaller of the two; the caller may skip adding it).
  void add(std::uint64_t hash, std::size_t position) {
    if (2 * (size_ + 1) > slots_.size()) resize(slots_.empty() ? 16 : 2 * slots_.size());
    place(hash, position + 1);
    ++size_;
  }

  /// Makes room for `count` entries in all: adding up to that many re-places none.
  void reserve(std::size_t count) {
    std::size_t slots = slots_.empty() ? 16 : slots_.size();
    while (2 * count > slots) slots *= 2;
    if (slots != slots_.size()) resize(slots);
  }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::size_t position = 0;  // the position + 1 (0: empty)
  };

  void place(std::uint64_t hash, std::size_t position1) noexcept {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = hash & mask;
    while (slots_[i].position != 0) i = (i + 1) & mask;
    slots_[i] = {hash, position1};
  }
  void resize(std::size_t slots) {
    std::vector<Slot> old(slots);
    old.swap(slots_);
    for (const Slot& slot : old)
      if (slot.position != 0) place(slot.hash, slot.position);
  }

  std::vector<Slot> slots_;  // a power of two long
  std::size_t size_ = 0;
};

}  // namespace swp::detail
