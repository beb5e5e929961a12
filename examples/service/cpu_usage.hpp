#pragma once
// CpuUsage: how busy the machine's CPUs were, and how much time the hypervisor took from them
// (steal), between two points — read from /proc/stat (Linux).

#include <array>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace service {

/// The aggregate `cpu` line of /proc/stat, in clock ticks: user nice system idle iowait irq
/// softirq steal. A load level samples it when it starts sending and when it stops.
struct CpuSample {
  std::array<std::uint64_t, 8> ticks{};

  /// The current counters, or nothing where /proc/stat cannot be read.
  static std::optional<CpuSample> now() {
    std::ifstream stat("/proc/stat");
    std::string line;
    if (!std::getline(stat, line) || line.rfind("cpu ", 0) != 0) return std::nullopt;
    std::istringstream fields(line.substr(4));
    CpuSample s;
    for (auto& t : s.ticks)
      if (!(fields >> t)) return std::nullopt;
    return s;
  }
};

/// Shares of the CPU time between two samples, in percent: `busy` (neither idle nor
/// waiting nor stolen) and `steal` (time the hypervisor ran something else while this
/// machine's CPUs had work: latency no program here can avoid).
struct CpuUsage {
  double busy_pct = 0;
  double steal_pct = 0;

  static CpuUsage between(const CpuSample& a, const CpuSample& b) {
    std::array<double, 8> d{};
    double total = 0;
    for (std::size_t i = 0; i < d.size(); ++i) {
      d[i] = double(b.ticks[i] - a.ticks[i]);
      total += d[i];
    }
    if (total <= 0) return {};
    const double idle = d[3] + d[4];
    return {100 * (total - idle - d[7]) / total, 100 * d[7] / total};
  }
};

}  // namespace service
