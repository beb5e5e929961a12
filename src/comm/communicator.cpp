#include "swp/comm/communicator.hpp"

namespace swp {

std::size_t size_of(DataType type) noexcept {
  switch (type) {
    case DataType::u8:
      return 1;
    case DataType::i32:
    case DataType::f32:
      return 4;
    case DataType::i64:
    case DataType::f64:
      return 8;
  }
  return 1;
}

std::string_view name_of(DataType type) noexcept {
  switch (type) {
    case DataType::u8:
      return "u8";
    case DataType::i32:
      return "i32";
    case DataType::i64:
      return "i64";
    case DataType::f32:
      return "f32";
    case DataType::f64:
      return "f64";
  }
  return "?";
}

std::string Communicator::describe(std::string_view op, std::string_view what, std::size_t count,
                                   DataType type) const {
  std::string s = "rank " + std::to_string(rank()) + ": " + std::string(op);
  if (!what.empty()) s += " '" + std::string(what) + "'";
  s += " (" + std::to_string(count) + " " + std::string(name_of(type)) + ")";
  return s;
}

void Communicator::require(bool ok, std::string_view op, std::string_view what,
                           std::string_view message) const {
  if (ok) return;
  std::string s = "rank " + std::to_string(rank()) + ": " + std::string(op);
  if (!what.empty()) s += " '" + std::string(what) + "'";
  throw std::invalid_argument(s + ": " + std::string(message));
}

void Communicator::require_counts(const AllToAllVBuffers& buffers,
                                  const std::string& description) const {
  const auto n = static_cast<std::size_t>(size());
  if (buffers.send_counts.size() == n && buffers.recv_counts.size() == n) return;
  throw CommError(rank(), "all_to_all_v",
                  description + ": the counts when it started had " +
                      std::to_string(buffers.send_counts.size()) + " send and " +
                      std::to_string(buffers.recv_counts.size()) +
                      " receive entries; it needs one per rank (" + std::to_string(n) + ")");
}

}  // namespace swp
