#pragma once
// ReadOutOfMemory: what a FileReader's read fails with where there is no memory to build its
// RecordError — a std::bad_alloc still naming the file, made in advance. Private to src/io
// (both readers use it).

#include <cstddef>
#include <exception>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <vector>

#include "swp/io/detail/file_reader.hpp"

namespace swp::io::detail {

// What a read of a file fails with where there is no memory to build its RecordError: still a
// std::bad_alloc (what it is, and what handlers of that catch), but one whose what() names the
// file, as every other read error does. Made for each file when the reader is
// (out_of_memory_errors), so that failing a read for want of memory allocates nothing.
class ReadOutOfMemory : public std::bad_alloc {
 public:
  explicit ReadOutOfMemory(const std::filesystem::path& file)
      : message_(file.string() +
                 ": a read failed, and there was no memory left to say how (std::bad_alloc)") {}
  [[nodiscard]] const char* what() const noexcept override { return message_.what(); }

 private:
  std::runtime_error message_;  // shares its text between copies: copying allocates nothing
};

// One ReadOutOfMemory per file of a reader, by file index.
using OutOfMemory = std::vector<std::exception_ptr>;

// Made on the caller's thread, where a throw (std::bad_alloc) reaches the caller.
inline OutOfMemory out_of_memory_errors(const std::vector<ReaderFile>& files) {
  OutOfMemory errors;
  errors.reserve(files.size());
  for (const ReaderFile& file : files)
    errors.push_back(std::make_exception_ptr(ReadOutOfMemory(file.path)));
  return errors;
}

// The read's file's ReadOutOfMemory in `errors`, or nullptr for a read of no file (its index
// past them: there is none to name).
inline std::exception_ptr out_of_memory_error(const OutOfMemory& errors,
                                              std::size_t file) noexcept {
  return file < errors.size() ? errors[file] : nullptr;
}

// The error `attempt` throws (a RecordError naming the file and the offset), or nullptr where it
// throws nothing; where there is no memory for that error, `out_of_memory`: the read's file's
// ReadOutOfMemory, made in advance, or, for a read of no file (nullptr), the std::bad_alloc
// itself. std::current_exception refers to the exception in flight and copying an
// exception_ptr counts a reference: neither allocates. The error is to be thrown, not made with
// std::make_exception_ptr: that copies the error (its path allocates) and, where the copy
// fails, returns the std::bad_alloc instead of throwing it, which would pass this by. Either
// way nothing escapes to the reader's thread.
template <class Attempt>
std::exception_ptr read_error(const std::exception_ptr& out_of_memory, Attempt attempt) noexcept {
  try {
    attempt();
  } catch (const std::bad_alloc&) {
    return out_of_memory ? out_of_memory : std::current_exception();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace swp::io::detail
