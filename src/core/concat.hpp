#pragma once
// concat(): builds a message from pieces (g++ 12 has no <format>).

#include <sstream>
#include <string>

namespace swp::detail {

template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

}  // namespace swp::detail
