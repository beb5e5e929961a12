#pragma once
// What the order check (Communicator::set_order_check) exchanges and compares, shared by the
// MPI and NCCL backends (the comm layer's private header).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace swp::detail {

/// What a rank is about to run, as the ranks exchange it: plain bytes (an all_gather of
/// size() × sizeof), the same layout on every rank of one build. Compared whole: `hash`
/// covers the full text, so calls that differ only past what `text` holds (a long task name
/// with the iteration, the count and the type at its end) differ too.
struct OpDescriptor {
  std::uint64_t hash = 0;  // FNV-1a of the full text
  char text[120] = {};     // "all_reduce 'what' (n type)"; a longer one as its head ... tail
  bool operator==(const OpDescriptor&) const = default;
};

/// FNV-1a, 64 bits: the same on every rank (std::hash need not be).
inline std::uint64_t text_hash(std::string_view text) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

inline OpDescriptor descriptor_of(const std::string& text) {
  OpDescriptor d;
  d.hash = text_hash(text);
  constexpr std::size_t room = sizeof d.text - 1;
  if (text.size() <= room) {
    text.copy(d.text, room);
    return d;
  }
  // Too long: its head and its tail — where the iteration, the count and the type are — so
  // that a mismatch's message shows how the calls differ.
  constexpr std::string_view cut = " ... ";
  constexpr std::size_t tail = 48;
  constexpr std::size_t head = room - cut.size() - tail;
  text.copy(d.text, head);
  cut.copy(d.text + head, cut.size());
  text.copy(d.text + head + cut.size(), tail, text.size() - tail);
  return d;
}

/// What the order check compares: the description without "rank R: " (which differs between
/// ranks by design), and for all_to_all_v without its count (the ranks' totals differ too).
inline std::string check_text(const std::string& description, bool with_count) {
  const auto colon = description.find(": ");
  std::string text = colon == std::string::npos ? description : description.substr(colon + 2);
  if (!with_count) {
    const auto open = text.rfind(" (");
    const auto space = text.rfind(' ');
    if (open != std::string::npos && space != std::string::npos && space > open)
      text = text.substr(0, open) + " (" + text.substr(space + 1);  // "(N type)" -> "(type)"
  }
  return text;
}

/// True when every rank's descriptor is `mine`.
inline bool same_everywhere(const std::vector<OpDescriptor>& all, const OpDescriptor& mine) {
  for (const OpDescriptor& d : all)
    if (!(d == mine)) return false;
  return true;
}

/// "rank 0 all_reduce 'B' (1 i64), rank 1 all_reduce 'A' (1 i64)".
inline std::string each_rank(const std::vector<OpDescriptor>& all) {
  std::string each;
  for (std::size_t r = 0; r < all.size(); ++r)
    each += (r == 0 ? "" : ", ") + std::string("rank ") + std::to_string(r) + " " + all[r].text;
  return each;
}

/// The message that fails a collective the ranks disagree on, after its description.
inline std::string order_mismatch(const std::vector<OpDescriptor>& all) {
  return " was not run: the ranks called different collectives here (order check: " +
         each_rank(all) + "); every rank must call them in the same order (globally ordered tasks)";
}

}  // namespace swp::detail
