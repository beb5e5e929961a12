#include "swp/io/io_errors.hpp"

#include <utility>

namespace swp::io {

namespace {
std::string describe(const std::exception_ptr& cause) {
  try {
    if (cause) std::rethrow_exception(cause);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
  return "unknown error";
}
}  // namespace

RecordError::RecordError(std::filesystem::path file, std::uint64_t offset, const std::string& why)
    : std::runtime_error(file.string() + " at offset " + std::to_string(offset) + ": " + why),
      file_(std::move(file)),
      offset_(offset) {}

LoaderError::LoaderError(std::string loader, std::exception_ptr cause)
    : std::runtime_error("loader '" + loader + "' failed: " + describe(cause)),
      loader_(std::move(loader)),
      cause_(std::move(cause)) {}

}  // namespace swp::io
