#pragma once
// RunStats: what a whole run of a pipeline measured.

#include <chrono>
#include <cstdint>

#include "swp/async/scheduler.hpp"

namespace swp {

/// What `Pipeline::run` and `Pipeline::run_serial` measured: the iterations run and the
/// elapsed time on the runtime's clock (wall time on host, virtual time on sim), from the
/// start of the run to the completion of its device work.
///
/// Example:
/// ```
/// const swp::RunStats stats = pipe.run(batches);
/// std::cout << stats.iterations << " iterations, " << stats.us_per_iter() << " us each\n";
/// ```
struct RunStats {
  std::int64_t iterations = 0;
  Clock::duration elapsed{};

  /// Elapsed microseconds per iteration; 0 for a run of no iteration.
  [[nodiscard]] double us_per_iter() const {
    return iterations == 0 ? 0.0
                           : std::chrono::duration<double, std::micro>(elapsed).count() /
                                 static_cast<double>(iterations);
  }
};

}  // namespace swp
