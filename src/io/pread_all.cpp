#include "swp/io/detail/pread_all.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

#include "swp/io/io_errors.hpp"

namespace swp::io::detail {

void pread_all(int fd, const std::filesystem::path& file, std::span<std::byte> out,
               std::uint64_t offset) {
  // pread takes a signed off_t: an offset past its range would fail as "Invalid argument".
  constexpr std::uint64_t max_offset = std::numeric_limits<off_t>::max();
  if (offset > max_offset || out.size() > max_offset - offset)
    throw RecordError(file, offset,
                      "a read of " + std::to_string(out.size()) + " bytes at offset " +
                          std::to_string(offset) + " lies past the end of any file");
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw RecordError(file, offset + done, std::string("read failed: ") + std::strerror(errno));
    if (n == 0)
      throw RecordError(file, offset + done,
                        "truncated: the file ends " + std::to_string(out.size() - done) +
                            " bytes before the end of the read at offset " +
                            std::to_string(offset));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace swp::io::detail
