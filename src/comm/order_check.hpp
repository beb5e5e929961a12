#pragma once
// What the order check (Communicator::set_order_check) exchanges and compares, shared by the
// MPI and NCCL backends (the comm layer's private header).

#include <cstddef>
#include <string>
#include <vector>

namespace swp::detail {

/// What a rank is about to run, as the ranks exchange it: plain bytes (an all_gather of
/// size() × sizeof), the same layout on every rank of one build.
struct OpDescriptor {
  char text[120] = {};  // "all_reduce 'what' (n type)", truncated
  bool operator==(const OpDescriptor&) const = default;
};

inline OpDescriptor descriptor_of(const std::string& text) {
  OpDescriptor d;
  text.copy(d.text, sizeof d.text - 1);
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
